package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/offsets"
)

const offsetsUsage = `usage: zkgroup offsets <reset|migrate> [flags]

  reset    plan (dry run) or execute moving a group's committed offsets of a topic
  migrate  copy a group's committed offsets between ZooKeeper and Kafka storage

"zkgroup offsets reset -h" and "zkgroup offsets migrate -h" show the flags.
`

func cmdOffsets(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, offsetsUsage)
		return exitUsage
	}
	switch args[0] {
	case "reset":
		return cmdReset(args[1:], stdout, stderr)
	case "migrate":
		return cmdMigrate(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, offsetsUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "zkgroup offsets: unknown subcommand %q\n%s", args[0], offsetsUsage)
	return exitUsage
}

// refuseIfActive fails while the group has members: their next commits
// would undo the change, or they would consume from positions the change
// moved under them.
func refuseIfActive(c *conn) error {
	ids, err := ops.Members(c.sess, c.group)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		return fmt.Errorf("%w: group %q has %d member(s) under /consumers/%s/ids (%s): stop them first; nothing was written",
			ops.ErrActive, c.group, len(ids), c.group, strings.Join(ids, ", "))
	}
	return nil
}

// connectToChange connects for a command that changes offsets: with
// execute, it refuses (and closes) while the group has members. On error
// it returns the exit code.
func (g *groupFlags) connectToChange(stderr io.Writer, execute bool) (*conn, int, error) {
	c, err := g.connect(stderr)
	if err != nil {
		return nil, exitFor(err), err
	}
	if execute {
		if err := refuseIfActive(c); err != nil {
			c.close()
			return nil, exitFailure, err
		}
	}
	return c, 0, nil
}

// resetFlags collects the mode flags of offsets reset.
type resetFlags struct {
	earliest, latest bool
	toOffset         string
	toDatetime       string
	shiftBy          string
}

func (r *resetFlags) spec() (ops.ResetSpec, error) {
	var specs []ops.ResetSpec
	if r.earliest {
		specs = append(specs, ops.ResetSpec{Mode: ops.ToEarliest})
	}
	if r.latest {
		specs = append(specs, ops.ResetSpec{Mode: ops.ToLatest})
	}
	if r.toOffset != "" {
		n, err := strconv.ParseInt(r.toOffset, 10, 64)
		if err != nil || n < 0 {
			return ops.ResetSpec{}, fmt.Errorf("%w: --to-offset %q: want a non-negative integer", errUsage, r.toOffset)
		}
		specs = append(specs, ops.ResetSpec{Mode: ops.ToOffset, Offset: n})
	}
	if r.toDatetime != "" {
		t, err := ops.ParseDatetime(r.toDatetime)
		if err != nil {
			return ops.ResetSpec{}, err
		}
		specs = append(specs, ops.ResetSpec{Mode: ops.ToDatetime, Time: t})
	}
	if r.shiftBy != "" {
		n, err := strconv.ParseInt(r.shiftBy, 10, 64)
		if err != nil {
			return ops.ResetSpec{}, fmt.Errorf("%w: --shift-by %q: want an integer", errUsage, r.shiftBy)
		}
		specs = append(specs, ops.ResetSpec{Mode: ops.ShiftBy, Shift: n})
	}
	if len(specs) != 1 {
		return ops.ResetSpec{}, fmt.Errorf("%w: give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by (got %d)", errUsage, len(specs))
	}
	return specs[0], nil
}

func parsePartitions(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: --partitions: %q is not a partition number", errUsage, f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// cmdReset plans (dry run, the default) or executes an offset reset for
// one topic.
func cmdReset(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("offsets reset", stderr)
	var g groupFlags
	g.register(fs, true)
	var r resetFlags
	topic := fs.String("topic", "", "topic whose offsets to reset (required)")
	partitions := fs.String("partitions", "", "partitions to reset, e.g. 0,1,2 (default: all)")
	fs.BoolVar(&r.earliest, "to-earliest", false, "reset to the earliest offset")
	fs.BoolVar(&r.latest, "to-latest", false, "reset to the latest offset")
	fs.StringVar(&r.toOffset, "to-offset", "", "reset to this offset (clamped to the log)")
	fs.StringVar(&r.toDatetime, "to-datetime", "", "reset to the first message at or after this time (RFC 3339)")
	fs.StringVar(&r.shiftBy, "shift-by", "", "move the committed offset by N (may be negative)")
	execute := fs.Bool("execute", false, "write the new offsets (default: dry run); refused while the group has members")
	if code, ok := g.parse(args, stdout, stderr); !ok {
		return code
	}
	if *topic == "" {
		return fail(stdout, stderr, g.json, exitUsage, fmt.Errorf("%w: --topic is required", errUsage))
	}
	if err := checkTopics("topic", *topic); err != nil {
		return fail(stdout, stderr, g.json, exitUsage, err)
	}
	spec, err := r.spec()
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	parts, err := parsePartitions(*partitions)
	if err != nil {
		return fail(stdout, stderr, g.json, exitUsage, err)
	}
	c, code, err := g.connectToChange(stderr, *execute)
	if err != nil {
		return fail(stdout, stderr, g.json, code, err)
	}
	defer c.close()
	store, err := c.store(g.storage)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*g.timeout)
	defer cancel()
	rows, err := ops.PlanReset(ctx, c.client, store, *topic, parts, spec)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	if *execute {
		// Check again right before writing: a member may have joined.
		if err := refuseIfActive(c); err != nil {
			return fail(stdout, stderr, g.json, exitFailure, err)
		}
		if err := ops.ExecuteReset(ctx, store, rows); err != nil {
			err = explain(err, g.cfg, sideOf(g.storage))
			return fail(stdout, stderr, g.json, exitFor(err), err)
		}
	}
	if g.json {
		_ = printJSON(stdout, map[string]any{"group": g.group, "offset_storage": g.storage, "mode": spec.Mode,
			"executed": *execute, "partitions": rows})
		return exitOK
	}
	fmt.Fprint(stdout, ops.ResetText(g.group, rows))
	if *execute {
		fmt.Fprintf(stdout, "\noffsets of %d partition(s) written to %s storage\n", len(rows), g.storage)
	} else {
		fmt.Fprintln(stdout, "\ndry run: nothing written; add --execute to write these offsets")
	}
	return exitOK
}

// cmdMigrate copies committed offsets between ZooKeeper and Kafka storage
// with offsets.Migrate (dry run unless --execute).
func cmdMigrate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("offsets migrate", stderr)
	var g groupFlags
	g.register(fs, false)
	from := fs.String("from", "", "source storage: zookeeper or kafka (required)")
	to := fs.String("to", "", "destination storage: kafka or zookeeper (required)")
	topics := fs.String("topic", "", "topics to migrate, comma-separated (default: every topic with offsets in the source)")
	execute := fs.Bool("execute", false, "write (default: dry run); refused while the group has members")
	overwrite := fs.Bool("overwrite", false, "also move destination offsets that are ahead of the source backwards")
	if code, ok := g.parse(args, stdout, stderr); !ok {
		return code
	}
	valid := func(s string) bool {
		return manager.Storage(s) == manager.StorageKafka || manager.Storage(s) == manager.StorageZooKeeper
	}
	if !valid(*from) || !valid(*to) || *from == *to {
		return fail(stdout, stderr, g.json, exitUsage,
			fmt.Errorf("%w: --from and --to must be kafka and zookeeper, one each (got %q and %q)", errUsage, *from, *to))
	}
	if err := checkTopics("topic", splitList(*topics)...); err != nil {
		return fail(stdout, stderr, g.json, exitUsage, err)
	}
	c, code, err := g.connectToChange(stderr, *execute)
	if err != nil {
		return fail(stdout, stderr, g.json, code, err)
	}
	defer c.close()
	parts, err := migrateParts(c, *from, *topics)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	src, err := c.store(*from)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	defer src.Close()
	dst, err := c.store(*to)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	defer dst.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*g.timeout+
		g.timeout*time.Duration(len(parts)/50))
	defer cancel()
	report, err := offsets.Migrate(ctx, src, dst, parts, offsets.MigrateOptions{DryRun: !*execute, Overwrite: *overwrite})
	if g.json {
		out := map[string]any{"group": g.group, "from": *from, "to": *to, "executed": *execute, "partitions": migrationsJSON(report)}
		if err != nil {
			out["error"] = err.Error()
		}
		_ = printJSON(stdout, out)
	} else {
		rows := make([][]string, 0, len(report))
		for _, m := range report {
			rows = append(rows, []string{m.Topic, fmt.Sprint(m.Partition), offText(m.From, m.FromOK), offText(m.To, m.ToOK), m.Action})
		}
		fmt.Fprint(stdout, ops.Table([]string{"TOPIC", "PARTITION", strings.ToUpper(*from), strings.ToUpper(*to) + "-BEFORE", "ACTION"}, rows))
		if !*execute {
			fmt.Fprintln(stdout, "\ndry run: nothing written; add --execute to copy")
		}
	}
	if err != nil {
		err = explain(err, g.cfg, sideOf(*to))
		fmt.Fprintf(stderr, "zkgroup: %v\n", err)
		return exitFor(err)
	}
	return exitOK
}

func offText(v int64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprint(v)
}

type migrationJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      *int64 `json:"from_offset"`
	To        *int64 `json:"to_offset_before"`
	Action    string `json:"action"`
}

func migrationsJSON(ms []offsets.Migration) []migrationJSON {
	out := make([]migrationJSON, 0, len(ms))
	for _, m := range ms {
		j := migrationJSON{Topic: m.Topic, Partition: m.Partition, Action: m.Action}
		if m.FromOK {
			v := m.From
			j.From = &v
		}
		if m.ToOK {
			v := m.To
			j.To = &v
		}
		out = append(out, j)
	}
	return out
}

// migrateParts lists the partitions to migrate: every partition of the
// given topics, or of every topic with an offset in the source.
func migrateParts(c *conn, from, topicList string) ([]offsets.TopicPartition, error) {
	topics := splitList(topicList)
	if len(topics) == 0 {
		committed, err := c.committed(from)
		if err != nil {
			return nil, err
		}
		for t := range committed {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	}
	var parts []offsets.TopicPartition
	partitions := ops.KafkaPartitions(c.client)
	for _, t := range topics {
		ps, err := partitions(t)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			parts = append(parts, offsets.TopicPartition{Topic: t, Partition: p})
		}
	}
	return parts, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
