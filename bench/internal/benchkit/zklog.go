package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// ZKLog reads the local ZooKeeper's transaction log (with ZooKeeper's own
// TxnLogToolkit) to tell whose the writes between two zxids were.
type ZKLog struct {
	dir, lib string
}

// NewZKLog returns the reader of the cluster's transaction log, or an
// error when there is no java or no log folder (then only zxid counts are
// printed).
func NewZKLog(c *testcluster.Cluster) (*ZKLog, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir(), "zookeeper", "data", "version-2")
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return &ZKLog{dir: dir, lib: c.LibDir()}, nil
}

// Txn is one logged transaction.
type Txn struct {
	Zxid    int64
	Session string
	Type    string // create, delete, setData, multi, createSession, closeSession, error, ...
	Path    string // when the type has one
}

// Read returns the transactions with from < zxid <= to.
func (l *ZKLog) Read(from, to int64) ([]Txn, error) {
	files, err := filepath.Glob(filepath.Join(l.dir, "log.*"))
	if err != nil {
		return nil, err
	}
	type logFile struct {
		path  string
		first int64
	}
	var logs []logFile
	for _, f := range files {
		first, err := strconv.ParseInt(strings.TrimPrefix(filepath.Ext(f), "."), 16, 64)
		if err == nil {
			logs = append(logs, logFile{f, first})
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].first < logs[j].first })
	var out []Txn
	for i, lf := range logs {
		if lf.first > to || (i+1 < len(logs) && logs[i+1].first <= from) {
			continue
		}
		cmd := exec.Command("java", "-cp", filepath.Join(l.lib, "*"), "org.apache.zookeeper.server.persistence.TxnLogToolkit", "-d", lf.path)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		_ = cmd.Run() // a log being written may end in a partial record: keep what was read
		sc := bufio.NewScanner(&stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if t, ok := parseTxn(sc.Text()); ok && t.Zxid > from && t.Zxid <= to {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// parseTxn parses "<date> session 0x.. cxid 0x.. zxid 0x.. <type> <args>".
func parseTxn(line string) (Txn, bool) {
	f := strings.Fields(line)
	var t Txn
	for i := 0; i+2 < len(f); i++ {
		switch f[i] {
		case "session":
			t.Session = f[i+1]
		case "zxid":
			z, err := strconv.ParseInt(strings.TrimPrefix(f[i+1], "0x"), 16, 64)
			if err != nil {
				return Txn{}, false
			}
			t.Zxid, t.Type = z, f[i+2]
			if t.Type == "multi" {
				// "multi create:  <len>/path  <data> ...;create: ...": the
				// first operation's path (each preceded by its length byte).
				for _, g := range f[i+3:] {
					if k := strings.Index(g, "/"); k >= 0 {
						t.Path = g[k:]
						break
					}
				}
				return t, true
			}
			if i+3 < len(f) {
				t.Path, _, _ = strings.Cut(strings.TrimLeft(f[i+3], "'"), ",")
			}
			return t, true
		}
	}
	return Txn{}, false
}

// Breakdown sorts transactions into a consumer group's own (made by a
// session that wrote under groupPath), ZooKeeper session starts and ends,
// and everything else (the brokers, the benchmark's marks).
type Breakdown struct {
	Total    int
	Group    map[string]int // "<kind> <owners|ids|offsets|...>" and "failed"
	Sessions int
	Other    map[string]int // by type and the path's first components
}

// Classify returns the breakdown of txns for the group whose nodes live
// under groupPath (e.g. "/kafka/consumers/g"): the group's are the writes
// under groupPath and the failed writes ("error" transactions, which carry
// no path) of the sessions that wrote there within txns.
func Classify(txns []Txn, groupPath string) Breakdown {
	groupSessions := map[string]bool{}
	for _, t := range txns {
		if strings.HasPrefix(t.Path, groupPath+"/") || t.Path == groupPath {
			groupSessions[t.Session] = true
		}
	}
	b := Breakdown{Total: len(txns), Group: map[string]int{}, Other: map[string]int{}}
	for _, t := range txns {
		switch {
		case t.Type == "createSession" || t.Type == "closeSession":
			b.Sessions++
		case groupSessions[t.Session] || strings.HasPrefix(t.Path, groupPath+"/"):
			switch {
			case t.Type == "error":
				b.Group["failed "+errName(t.Path)]++
			case strings.HasPrefix(t.Path, groupPath+"/"):
				sub, _, _ := strings.Cut(strings.TrimPrefix(t.Path, groupPath+"/"), "/")
				b.Group[t.Type+" "+sub]++
			default:
				b.Group[t.Type+" "+t.Path]++
			}
		default:
			p := t.Path
			if parts := strings.SplitN(p, "/", 5); len(parts) > 4 {
				p = strings.Join(parts[:4], "/") + "/..."
			}
			b.Other[strings.TrimSpace(t.Type+" "+p)]++
		}
	}
	return b
}

// errName names a ZooKeeper error code of an error transaction.
func errName(code string) string {
	switch code {
	case "-101":
		return "(no node)"
	case "-110":
		return "(node exists)"
	case "-103":
		return "(bad version)"
	case "-111":
		return "(not empty)"
	}
	return "(" + code + ")"
}

func (b Breakdown) String() string {
	n := 0
	for _, v := range b.Group {
		n += v
	}
	m := 0
	for _, v := range b.Other {
		m += v
	}
	return fmt.Sprintf("%d = the group's sessions %d %s + session starts/ends %d + others %d %s", b.Total, n, top(b.Group, 8), b.Sessions, m, top(b.Other, 4))
}

// top lists the largest counts of m.
func top(m map[string]int, k int) string {
	counts, more := Largest(m, k)
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%s: %d", c.Key, c.N))
	}
	if more > 0 {
		parts = append(parts, "...")
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
