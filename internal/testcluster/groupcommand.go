package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ConsumerGroupCommandClass is the main class of Kafka's
// kafka-consumer-groups tool in the kafka-tools jar of KafkaVersion.
const ConsumerGroupCommandClass = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"

// ErrGroupCommand is wrapped by DescribeGroup errors: the tool failed, or
// its output could not be parsed.
var ErrGroupCommand = errors.New("testcluster: kafka-consumer-groups")

// GroupRow is one partition row of `kafka-consumer-groups --describe`. It is
// a plain value, safe for concurrent reads.
type GroupRow struct {
	Topic         string
	Partition     int32
	CurrentOffset int64 // committed offset (next to read); -1 for "-" (none)
	LogEndOffset  int64 // -1 for "-"
	// Lag is LogEndOffset - CurrentOffset as the tool prints it: negative
	// when the committed offset lies beyond the log end; -1 also for "-".
	Lag        int64
	ConsumerID string
	Host       string
	ClientID   string
}

// toolLog4j silences everything below ERROR; the tool's table goes to
// stdout, log lines to stderr.
const toolLog4j = `log4j.rootLogger=ERROR, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
`

// DescribeGroup runs Kafka's own `kafka-consumer-groups --describe --group
// group` (a small JVM: java -cp LibDir/* ConsumerGroupCommandClass) against
// the running brokers and returns its partition rows in the tool's order.
// A group without committed offsets gives no rows and no error. It blocks
// while the JVM runs (a few seconds) and until ctx is done; safe for
// concurrent use.
func (c *Cluster) DescribeGroup(ctx context.Context, group string) ([]GroupRow, error) {
	addrs := c.Addrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no running broker", ErrGroupCommand)
	}
	if err := writeToolLog4j(c.dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGroupCommand, err)
	}
	args := append(toolArgs(c.LibDir(), c.dir), ConsumerGroupCommandClass,
		"--bootstrap-server", strings.Join(addrs, ","), "--describe", "--group", group)
	var out string
	// The tool's admin client gives up on its own timeouts (finding the
	// coordinator, a node assignment) when a loaded machine answers
	// slowly: such a run is tried again, up to 3 times in all.
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, "java", args...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%w: describe group %q: %w\nstdout:\n%s\nstderr:\n%s",
				ErrGroupCommand, group, err, stdout.String(), stderr.String())
		}
		// The tool reports errors such as an unknown group on stdout,
		// with exit status 0.
		out = stdout.String()
		if !strings.HasPrefix(out, "Error:") && !strings.Contains(out, "\nError:") {
			break
		}
		if attempt < 3 && strings.Contains(out, "errors.TimeoutException") && ctx.Err() == nil {
			c.note(fmt.Sprintf("kafka-consumer-groups timed out (attempt %d); trying again", attempt))
			continue
		}
		return nil, fmt.Errorf("%w: describe group %q: %s", ErrGroupCommand, group, strings.TrimSpace(out))
	}
	rows, err := ParseGroupDescribe(out)
	if err != nil {
		return nil, fmt.Errorf("%w: describe group %q: %w", ErrGroupCommand, group, err)
	}
	return rows, nil
}

// describeColumns are the header of the --describe table, in order.
var describeColumns = []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}

// ParseGroupDescribe parses the output of `kafka-consumer-groups --describe`
// for one group: lines before the header (such as "Consumer group 'g' has
// no active members.") and blank lines are skipped. Columns are cut at the
// header's column positions (the tool left-aligns each value under its
// header), so values may contain spaces. Errors wrap ErrGroupCommand and
// quote the offending line. Pure; safe for concurrent use.
func ParseGroupDescribe(out string) ([]GroupRow, error) {
	var starts []int
	var rows []GroupRow
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \r\t")
		if line == "" {
			continue
		}
		if starts == nil {
			if strings.HasPrefix(line, "GROUP ") {
				s, err := headerStarts(line)
				if err != nil {
					return nil, err
				}
				starts = s
			}
			continue
		}
		r, err := parseRow(line, starts)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	if starts == nil && strings.TrimSpace(out) != "" && !strings.Contains(out, "has no active members") {
		return nil, fmt.Errorf("%w: no table header in output %q", ErrGroupCommand, clipOut(out))
	}
	return rows, nil
}

// headerStarts returns the byte offset of each describeColumns header.
func headerStarts(line string) ([]int, error) {
	f := strings.Fields(line)
	if len(f) != len(describeColumns) {
		return nil, fmt.Errorf("%w: header %q: want columns %v", ErrGroupCommand, line, describeColumns)
	}
	starts := make([]int, len(describeColumns))
	from := 0
	for i, col := range describeColumns {
		if f[i] != col {
			return nil, fmt.Errorf("%w: header %q: column %d is %q, want %q", ErrGroupCommand, line, i+1, f[i], col)
		}
		j := strings.Index(line[from:], col)
		starts[i] = from + j
		from += j + len(col)
	}
	return starts, nil
}

// parseRow cuts a table line at the header's column starts.
func parseRow(line string, starts []int) (GroupRow, error) {
	cell := func(i int) string {
		a := starts[i]
		if a >= len(line) {
			return ""
		}
		b := len(line)
		if i+1 < len(starts) && starts[i+1] < b {
			b = starts[i+1]
		}
		return strings.TrimSpace(line[a:b])
	}
	// A value wider than its column would shift the rest: check that every
	// column boundary falls on a space.
	for _, s := range starts[1:] {
		if s < len(line) && s > 0 && line[s-1] != ' ' {
			return GroupRow{}, fmt.Errorf("%w: row %q does not line up with the header", ErrGroupCommand, line)
		}
	}
	r := GroupRow{Topic: cell(1), ConsumerID: cell(6), Host: cell(7), ClientID: cell(8)}
	if r.Topic == "" {
		return GroupRow{}, fmt.Errorf("%w: row %q: empty TOPIC", ErrGroupCommand, line)
	}
	p, err := strconv.ParseInt(cell(2), 10, 32)
	if err != nil || p < 0 {
		return GroupRow{}, fmt.Errorf("%w: row %q: PARTITION %q is not a partition number", ErrGroupCommand, line, cell(2))
	}
	r.Partition = int32(p)
	for _, f := range []struct {
		col int
		dst *int64
		neg bool
	}{{3, &r.CurrentOffset, false}, {4, &r.LogEndOffset, false}, {5, &r.Lag, true}} {
		v, err := parseDash(cell(f.col), f.neg)
		if err != nil {
			return GroupRow{}, fmt.Errorf("%w: row %q: %s %q: %v", ErrGroupCommand, line, describeColumns[f.col], cell(f.col), err)
		}
		*f.dst = v
	}
	return r, nil
}

// parseDash parses a decimal (non-negative unless neg), or "-" as -1.
func parseDash(s string, neg bool) (int64, error) {
	if s == "-" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("not a number or -")
	}
	if v < 0 && !neg {
		return 0, errors.New("negative")
	}
	return v, nil
}

func clipOut(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
