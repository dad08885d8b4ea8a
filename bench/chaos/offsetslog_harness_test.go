package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// offsetsPartition is the __consumer_offsets partition of group: Kafka's
// Utils.abs(group.hashCode()) % partitions (Java's String.hashCode over
// UTF-16 code units).
func offsetsPartition(group string, partitions int32) int32 {
	var h int32
	for _, r := range group {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}

// offsetsHistory is the group's commit history for one topic as Kafka's
// log holds it: per partition, every commit in log order.
type offsetsHistory struct {
	Source  string // the replica folder read
	Records int
	Segs    int
	ByPart  map[int32][]commitEv
}

var createTimeRE = regexp.MustCompile(`CreateTime: (\d+)`)

// readOffsetsHistory runs kafka.tools.DumpLogSegments --offsets-decoder
// over every broker's replica of the group's __consumer_offsets partition
// and keeps the replica with the most commits of the group (they should
// agree; a replica that was behind holds fewer).
func (r *run) readOffsetsHistory(ctx context.Context) (*offsetsHistory, error) {
	n := offsetsPartition(r.group, 10) // offsets.topic.num.partitions of internal/testcluster
	dirs, _ := filepath.Glob(filepath.Join(r.c.Dir(), "broker-*", "data", fmt.Sprintf("__consumer_offsets-%d", n)))
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no replica folder __consumer_offsets-%d under %s", n, r.c.Dir())
	}
	var best *offsetsHistory
	var errs []string
	for _, dir := range dirs {
		h, err := r.dumpOffsets(ctx, dir)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if best == nil || h.Records > best.Records {
			best = h
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return best, nil
}

func (r *run) dumpOffsets(ctx context.Context, dir string) (*offsetsHistory, error) {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	if len(segs) == 0 {
		return nil, fmt.Errorf("%s: no segments", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args := []string{"-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-Dlog4j.configuration=file:" + filepath.Join(r.c.Dir(), "tools-log4j.properties"),
		"-Dlog4j2.configurationFile=" + filepath.Join(r.c.Dir(), "tools-log4j2.properties"),
		"-cp", filepath.Join(r.c.LibDir(), "*"),
		"kafka.tools.DumpLogSegments", "--offsets-decoder", "--files", strings.Join(segs, ",")}
	cmd := exec.CommandContext(ctx, "java", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &offsetsHistory{Source: dir, Segs: len(segs), ByPart: map[int32][]commitEv{}}
	raw, _ := os.Create(filepath.Join(r.out, "offsets-dump-"+filepath.Base(filepath.Dir(filepath.Dir(dir)))+".txt"))
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "key: ") || !strings.Contains(line, r.group) {
			continue
		}
		if raw != nil {
			fmt.Fprintln(raw, line)
		}
		p, off, ts, ok := parseOffsetCommit(line, r.group, r.topic)
		if !ok {
			continue
		}
		h.Records++
		h.ByPart[p] = append(h.ByPart[p], commitEv{t: ts, off: off})
	}
	if raw != nil {
		raw.Close()
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("DumpLogSegments %s: %v: %.2000s", dir, err, stderr.String())
	}
	return h, nil
}

// parseOffsetCommit reads one record line of DumpLogSegments
// --offsets-decoder: "... CreateTime: <ms> ... key: {json} payload: {json}".
// The time is the commit's commitTimestamp, else the record's CreateTime,
// in unix ns.
func parseOffsetCommit(line, group, topic string) (p int32, off, ts int64, ok bool) {
	ki := strings.Index(line, "key: ")
	pi := strings.Index(line, " payload: ")
	if ki < 0 || pi < ki {
		return 0, 0, 0, false
	}
	var key struct {
		Type string `json:"type"`
		Data struct {
			Group     string `json:"group"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(line[ki+5:pi]), &key); err != nil {
		return 0, 0, 0, false
	}
	if key.Data.Group != group || key.Data.Topic != topic {
		return 0, 0, 0, false
	}
	var val struct {
		Data struct {
			Offset          int64 `json:"offset"`
			CommitTimestamp int64 `json:"commitTimestamp"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line[pi+10:])), &val); err != nil {
		return 0, 0, 0, false // a tombstone ("<DELETE>")
	}
	ms := val.Data.CommitTimestamp
	if ms == 0 {
		if m := createTimeRE.FindStringSubmatch(line); m != nil {
			ms, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return key.Data.Partition, val.Data.Offset, ms * int64(time.Millisecond), true
}
