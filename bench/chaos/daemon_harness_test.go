package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// Daemons is the number of zkgroup daemons of a run.
const Daemons = 3

// daemon is one of the three members: a system user of its own (so that
// iptables can cut it off by uid) and its successive processes
// (incarnations).
type daemon struct {
	idx      int // 1..Daemons
	user     string
	uid, gid uint32

	mu   sync.Mutex
	cur  *incarnation
	gen  int  // restarts with a new instance id
	hold bool // a fault is acting on it: the monitor leaves it alone
}

// incarnation is one process of a daemon.
type incarnation struct {
	id         int32 // index in collector.incs
	d          *daemon
	instanceID string
	cmd        *exec.Cmd
	done       chan struct{}
	expected   bool // the runner killed or stopped it on purpose
}

// incInfo is what the judge knows of an incarnation.
type incInfo struct {
	Daemon     int
	InstanceID string
	PID        int
	Start, End int64  // unix ns; End 0 while running
	Exit       string // "exit 0", "signal: killed", ...
	Expected   bool
	Stderr     string // file of its log lines
}

// ensureUser creates the system user name if it does not exist.
func ensureUser(name string) (uid, gid uint32, err error) {
	if _, err := user.Lookup(name); err != nil {
		if b, err := exec.Command("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("useradd %s: %v: %s", name, err, b)
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	a, _ := strconv.Atoi(u.Uid)
	b, _ := strconv.Atoi(u.Gid)
	return uint32(a), uint32(b), nil
}

func newDaemons() ([]*daemon, error) {
	var ds []*daemon
	for i := 1; i <= Daemons; i++ {
		name := fmt.Sprintf("zkgchaos%d", i)
		uid, gid, err := ensureUser(name)
		if err != nil {
			return nil, err
		}
		ds = append(ds, &daemon{idx: i, user: name, uid: uid, gid: gid})
	}
	return ds, nil
}

// start runs a new process of d (a new instance id when newID). The
// caller holds no lock.
func (r *run) start(d *daemon, newID bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if newID {
		d.gen++
	}
	id := fmt.Sprintf("chaos-%d", d.idx)
	if d.gen > 0 {
		id = fmt.Sprintf("chaos-%d-r%d", d.idx, d.gen)
	}
	n := r.col.nextInc()
	logPath := filepath.Join(r.out, "logs", fmt.Sprintf("d%d-%03d.log", d.idx, n))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, "run",
		"--group", r.group,
		"--zookeeper", r.c.ZooKeeperConnect(),
		"--subscription", "static:"+r.topic,
		"--instance-id", id,
		// A restarted incarnation takes a new id (see above): no restart
		// grace, or the old id's partitions would wait for it.
		"--restart-grace", "off",
		"--session-timeout", r.session.String(),
		"--strategy", *flagStrategy,
		"--partition-commit-interval", flagCommit.String(),
		"--admin-listen=",
		"--log-format", "json",
		"--log-level", "info",
	)
	if *flagKafkaVer != "" {
		cmd.Args = append(cmd.Args, "--kafka-version", *flagKafkaVer)
	}
	cmd.Env = []string{"HOME=/tmp", "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: d.uid, Gid: d.gid}, Setpgid: true}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start daemon %d: %w", d.idx, err)
	}
	inc := &incarnation{id: n, d: d, instanceID: id, cmd: cmd, done: make(chan struct{})}
	r.col.addInc(n, &incInfo{Daemon: d.idx, InstanceID: id, PID: cmd.Process.Pid, Start: time.Now().UnixNano(), Stderr: logPath})
	d.cur = inc
	go func() {
		r.readPrints(inc, stdout)
		err := cmd.Wait()
		logf.Close()
		exit := "exit 0"
		if err != nil {
			exit = err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				exit = ee.ProcessState.String()
			}
		}
		d.mu.Lock()
		expected := inc.expected
		d.mu.Unlock()
		r.col.endInc(n, exit, expected)
		close(inc.done)
	}()
	return nil
}

// readPrints reads the stdout sink's JSON lines of an incarnation, each
// stamped with the time it was read.
func (r *run) readPrints(inc *incarnation, rd io.Reader) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var rec struct {
		Partition    int32   `json:"partition"`
		Offset       int64   `json:"offset"`
		Value        *string `json:"value"`
		FencingToken int64   `json:"fencing_token"`
	}
	for sc.Scan() {
		now := time.Now().UnixNano()
		rec.Value, rec.FencingToken = nil, 0
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			r.col.garbage(inc.id, sc.Text())
			continue
		}
		seq := int64(-1)
		if rec.Value != nil && strings.HasPrefix(*rec.Value, "s") {
			if v, err := strconv.ParseInt((*rec.Value)[1:], 10, 64); err == nil {
				seq = v
			}
		}
		r.col.addPrint(printEv{t: now, off: rec.Offset, seq: seq, p: rec.Partition, inc: inc.id, tok: rec.FencingToken})
	}
}

// current returns d's running incarnation, or nil.
func (d *daemon) current() *incarnation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return nil
	}
	select {
	case <-d.cur.done:
		return nil
	default:
		return d.cur
	}
}

// signal sends sig to d's running process; expected marks that it is
// meant to end it.
func (d *daemon) signal(sig syscall.Signal, expected bool) (*incarnation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return nil, fmt.Errorf("daemon %d: not running", d.idx)
	}
	select {
	case <-d.cur.done:
		return nil, fmt.Errorf("daemon %d: not running", d.idx)
	default:
	}
	if expected {
		d.cur.expected = true
	}
	return d.cur, d.cur.cmd.Process.Signal(sig)
}

func (d *daemon) setHold(h bool) {
	d.mu.Lock()
	d.hold = h
	d.mu.Unlock()
}

// monitor restarts (same instance id) any daemon whose process ended
// without the runner meaning it, and notes it, until stop is closed.
func (r *run) monitor(stop <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, d := range r.daemons {
			d.mu.Lock()
			hold, cur := d.hold, d.cur
			d.mu.Unlock()
			if hold || cur == nil {
				continue
			}
			select {
			case <-cur.done:
			default:
				continue
			}
			d.mu.Lock()
			exp := cur.expected
			d.mu.Unlock()
			if exp {
				continue
			}
			r.col.note("daemon %d (%s) exited on its own: %s; restarting it", d.idx, cur.instanceID, r.col.incExit(cur.id))
			benchkit.Say("  ! daemon %d (%s) exited on its own (%s): restarting it", d.idx, cur.instanceID, r.col.incExit(cur.id))
			if err := r.start(d, false); err != nil {
				r.col.note("restart daemon %d: %v", d.idx, err)
			}
		}
	}
}

// killAll ends every daemon process at once (cleanup).
func (r *run) killAll() {
	for _, d := range r.daemons {
		if inc := d.current(); inc != nil {
			d.mu.Lock()
			inc.expected = true
			d.mu.Unlock()
			_ = inc.cmd.Process.Signal(syscall.SIGCONT)
			_ = inc.cmd.Process.Kill()
			select {
			case <-inc.done:
			case <-time.After(10 * time.Second):
			}
		}
	}
}
