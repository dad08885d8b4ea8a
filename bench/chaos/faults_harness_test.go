package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// The fault kinds.
const (
	kKill9      = "kill9"       // kill -9 a daemon, restart it (same or new instance id)
	kTerm       = "sigterm"     // SIGTERM a daemon, wait for its exit, restart it
	kStop       = "sigstop"     // SIGSTOP a daemon for 1-3x the session timeout, then SIGCONT
	kCutZK      = "cut-zk"      // drop one daemon's packets to ZooKeeper
	kCutBrokers = "cut-brokers" // drop one daemon's packets to every broker
	kCutBoth    = "cut-both"    // both
	kBrokerKill = "broker-kill9"
	kZKRestart  = "zk-restart"
)

var kinds = []string{kKill9, kTerm, kStop, kCutZK, kCutBrokers, kCutBoth, kBrokerKill, kZKRestart}

// The ensemble's fault kinds, drawn only with -zookeepers 3 or 5 (where
// zk-restart restarts every server at once). None should cost a session:
// a member moves to another server within its timeout.
const (
	kZKServer = "zk-server" // SIGTERM or kill -9 one ZooKeeper server, restart it
	kZKLeader = "zk-leader" // kill -9 the ZooKeeper leader, restart it
	kZKCut    = "zk-cut"    // cut one ZooKeeper server off from the others (iptables)
)

var ensembleKinds = []string{kZKServer, kZKLeader, kZKCut}

// allKinds is every kind, in the order the summary lists them.
var allKinds = append(append([]string(nil), kinds...), ensembleKinds...)

// hard are the kinds after which a member's last commits may legitimately
// be lost (its process died, or its session may have expired).
var hard = map[string]bool{kKill9: true, kStop: true, kCutZK: true, kCutBoth: true}

// Fault is one planned fault (exported for the record's gob).
type Fault struct {
	At     time.Duration // from the start of the schedule
	Kind   string
	Daemon int           // 1..Daemons for the daemon kinds
	Broker int32         // for broker-kill9
	Dur    time.Duration // how long the fault holds (cut, pause, down time, delay before a restart)
	NewID  bool          // restart with a new instance id
	Hard   bool          // zk-restart, zk-server: kill -9 rather than SIGTERM
	// Server is the ZooKeeper server of zk-server and zk-cut (1..n); of
	// zk-leader, the leader found when the fault began (0 in the plan).
	Server int
}

func (f Fault) String() string {
	s := fmt.Sprintf("%8.1fs %-12s", f.At.Seconds(), f.Kind)
	switch f.Kind {
	case kBrokerKill:
		s += fmt.Sprintf(" broker %d, down %.1fs", f.Broker, f.Dur.Seconds())
	case kZKRestart:
		how := "SIGTERM"
		if f.Hard {
			how = "kill -9"
		}
		s += fmt.Sprintf(" %s, down %.1fs", how, f.Dur.Seconds())
	case kZKServer:
		how := "SIGTERM"
		if f.Hard {
			how = "kill -9"
		}
		s += fmt.Sprintf(" server %d, %s, down %.1fs", f.Server, how, f.Dur.Seconds())
	case kZKLeader:
		s += fmt.Sprintf(" kill -9, down %.1fs", f.Dur.Seconds())
		if f.Server != 0 {
			s += fmt.Sprintf(" (server %d)", f.Server)
		}
	case kZKCut:
		s += fmt.Sprintf(" server %d, %.1fs", f.Server, f.Dur.Seconds())
	case kKill9, kTerm:
		id := "same id"
		if f.NewID {
			id = "new id"
		}
		s += fmt.Sprintf(" daemon %d, restart after %.1fs, %s", f.Daemon, f.Dur.Seconds(), id)
	default:
		s += fmt.Sprintf(" daemon %d, %.1fs", f.Daemon, f.Dur.Seconds())
	}
	return s
}

// executed is a fault as it happened.
type executed struct {
	Fault
	Start, End int64 // unix ns: when it began and when it was healed
	Err        string
}

// parseKinds returns the kinds of -kinds; empty: every kind, the
// ensemble's only with an ensemble (a schedule without one is the same
// for a seed as before they existed).
func parseKinds(t *testing.T, s string, ensemble bool) []string {
	if s == "" {
		if ensemble {
			return allKinds
		}
		return kinds
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(allKinds, k) {
			t.Fatalf("-kinds: unknown kind %q (known: %s)", k, strings.Join(allKinds, ","))
		}
		if !ensemble && slices.Contains(ensembleKinds, k) {
			t.Fatalf("-kinds: %s needs a ZooKeeper ensemble (-zookeepers 3)", k)
		}
		out = append(out, k)
	}
	return out
}

func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// plan draws the schedule: one fault at a time, each followed by a quiet
// gap, from a 15 s warm-up to the end of the run. zkServers is the
// number of ZooKeeper servers.
func plan(rng *rand.Rand, total, session, gap, maxCut time.Duration, ks []string, zkServers int) []Fault {
	var out []Fault
	at := 15 * time.Second
	for at < total {
		f := Fault{At: at, Kind: ks[rng.IntN(len(ks))], Daemon: 1 + rng.IntN(Daemons)}
		busy := time.Duration(0) // how long the fault keeps the runner busy beyond Dur
		switch f.Kind {
		case kKill9:
			f.Dur = uniform(rng, 0, 4*time.Second)
			f.NewID = rng.IntN(2) == 0
		case kTerm:
			f.Dur = uniform(rng, 0, 2*time.Second)
			f.NewID = rng.IntN(2) == 0
			busy = 3 * time.Second
		case kStop:
			f.Dur = time.Duration(float64(session) * (1 + 2*rng.Float64()))
		case kCutZK, kCutBrokers, kCutBoth:
			f.Dur = uniform(rng, 2*time.Second, maxCut)
		case kBrokerKill:
			f.Broker = int32(1 + rng.IntN(3))
			f.Dur = uniform(rng, 2*time.Second, 10*time.Second)
			busy = 8 * time.Second
		case kZKRestart:
			f.Dur = uniform(rng, time.Second, 5*time.Second)
			f.Hard = rng.IntN(2) == 0
			busy = 2 * time.Second
		case kZKServer:
			f.Server = 1 + rng.IntN(zkServers)
			f.Dur = uniform(rng, time.Second, 5*time.Second)
			f.Hard = rng.IntN(2) == 0
			busy = 2 * time.Second
		case kZKLeader:
			f.Dur = uniform(rng, time.Second, 5*time.Second)
			f.Hard = true
			busy = 2 * time.Second
		case kZKCut:
			f.Server = 1 + rng.IntN(zkServers)
			f.Dur = uniform(rng, 2*time.Second, min(maxCut, 20*time.Second))
			busy = 2 * time.Second
		}
		out = append(out, f)
		at += f.Dur + busy + time.Duration(float64(gap)*(0.5+rng.Float64()))
	}
	return out
}

func writeSchedule(path string, s []Fault) error {
	var b strings.Builder
	for _, f := range s {
		b.WriteString(f.String() + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func countKinds(s []Fault) string {
	n := map[string]int{}
	for _, f := range s {
		n[f.Kind]++
	}
	var parts []string
	for _, k := range allKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// firewall is an iptables chain of the run's own, jumped to from OUTPUT.
// A cut of a ZooKeeper server from the others has a chain of its own
// (testcluster.ZooKeeperCut), held in zkCut until healed.
type firewall struct {
	chain   string
	zkPorts []string // every server's client port
	brokers []string // ports

	mu    sync.Mutex
	zkCut *testcluster.ZooKeeperCut
}

const chain = "ZKGCHAOS"

func ipt(args ...string) error {
	b, err := exec.Command("iptables", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, b)
	}
	return nil
}

func newFirewall(c *testcluster.Cluster) (*firewall, error) {
	fw := &firewall{chain: chain}
	for _, p := range c.ZooKeeperPorts() {
		fw.zkPorts = append(fw.zkPorts, fmt.Sprint(p))
	}
	for _, id := range c.BrokerIDs() {
		_, bp, err := net.SplitHostPort(c.BrokerAddr(id))
		if err != nil {
			return nil, err
		}
		fw.brokers = append(fw.brokers, bp)
	}
	// A chain left by an interrupted run: remove it first.
	_ = ipt("-D", "OUTPUT", "-j", chain)
	_ = ipt("-F", chain)
	_ = ipt("-X", chain)
	if err := ipt("-N", chain); err != nil {
		return nil, err
	}
	if err := ipt("-I", "OUTPUT", "-j", chain); err != nil {
		return nil, err
	}
	return fw, nil
}

// cut drops uid's packets to ZooKeeper and/or the brokers.
func (fw *firewall) cut(uid uint32, zk, brokers bool) error {
	u := fmt.Sprint(uid)
	if zk {
		if err := ipt("-A", fw.chain, "-p", "tcp", "-m", "owner", "--uid-owner", u, "-m", "multiport", "--dports", strings.Join(fw.zkPorts, ","), "-j", "DROP"); err != nil {
			return err
		}
	}
	if brokers {
		if err := ipt("-A", fw.chain, "-p", "tcp", "-m", "owner", "--uid-owner", u, "-m", "multiport", "--dports", strings.Join(fw.brokers, ","), "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}

func (fw *firewall) heal() error { return ipt("-F", fw.chain) }

// cutZK cuts ZooKeeper server n off from the others until healZK.
func (fw *firewall) cutZK(c *testcluster.Cluster, n int) error {
	cut, err := c.CutZooKeeperServer(n)
	if err != nil {
		return err
	}
	fw.mu.Lock()
	fw.zkCut = cut
	fw.mu.Unlock()
	return nil
}

// healZK heals the cut of a ZooKeeper server, if any.
func (fw *firewall) healZK() error {
	fw.mu.Lock()
	cut := fw.zkCut
	fw.zkCut = nil
	fw.mu.Unlock()
	if cut == nil {
		return nil
	}
	return cut.Heal()
}

func (fw *firewall) close() {
	_ = fw.healZK()
	_ = ipt("-D", "OUTPUT", "-j", fw.chain)
	_ = ipt("-F", fw.chain)
	_ = ipt("-X", fw.chain)
}

// exec carries out one fault and returns when it is healed (restarted,
// resumed, rules flushed).
func (r *run) exec(ctx context.Context, f Fault) executed {
	ex := executed{Fault: f, Start: time.Now().UnixNano()}
	err := r.execFault(ctx, &ex.Fault)
	ex.End = time.Now().UnixNano()
	if err != nil {
		ex.Err = err.Error()
	}
	return ex
}

func (r *run) execFault(ctx context.Context, f *Fault) error {
	var d *daemon
	if f.Daemon > 0 {
		d = r.daemons[f.Daemon-1]
	}
	switch f.Kind {
	case kKill9, kTerm:
		d.setHold(true)
		defer d.setHold(false)
		sig := syscall.SIGKILL
		if f.Kind == kTerm {
			sig = syscall.SIGTERM
		}
		inc, err := d.signal(sig, true)
		if err != nil {
			return err
		}
		select {
		case <-inc.done:
		case <-time.After(60 * time.Second):
			_ = inc.cmd.Process.Kill()
			<-inc.done
			return fmt.Errorf("daemon %d did not exit within 60 s of %v: killed", d.idx, sig)
		}
		time.Sleep(f.Dur)
		return r.start(d, f.NewID)
	case kStop:
		d.setHold(true)
		defer d.setHold(false)
		if _, err := d.signal(syscall.SIGSTOP, false); err != nil {
			return err
		}
		time.Sleep(f.Dur)
		_, err := d.signal(syscall.SIGCONT, false)
		return err
	case kCutZK, kCutBrokers, kCutBoth:
		if err := r.fw.cut(d.uid, f.Kind != kCutBrokers, f.Kind != kCutZK); err != nil {
			return err
		}
		time.Sleep(f.Dur)
		return r.fw.heal()
	case kBrokerKill:
		if err := r.c.KillBroker(f.Broker); err != nil {
			return err
		}
		time.Sleep(f.Dur)
		return r.c.StartBroker(ctx, f.Broker)
	case kZKRestart:
		var err error
		if f.Hard {
			err = r.c.KillZooKeeper()
		} else {
			err = r.c.StopZooKeeper()
		}
		if err != nil {
			return err
		}
		time.Sleep(f.Dur)
		return r.c.StartZooKeeper(ctx)
	case kZKServer, kZKLeader:
		if f.Kind == kZKLeader {
			if f.Server = r.c.ZooKeeperLeader(); f.Server == 0 {
				return fmt.Errorf("no ZooKeeper server leads")
			}
		}
		var err error
		if f.Hard {
			err = r.c.KillZooKeeperServer(f.Server)
		} else {
			err = r.c.StopZooKeeperServer(f.Server)
		}
		if err != nil {
			return err
		}
		time.Sleep(f.Dur)
		return r.c.StartZooKeeperServer(ctx, f.Server)
	case kZKCut:
		if err := r.fw.cutZK(r.c, f.Server); err != nil {
			return err
		}
		time.Sleep(f.Dur)
		if err := r.fw.healZK(); err != nil {
			return err
		}
		// Back in the quorum before the next fault: a fault on another
		// server meanwhile would leave no quorum at all.
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return r.c.WaitZooKeeper(wctx)
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// healAll lifts every fault: rules flushed, paused daemons resumed,
// stopped daemons started again.
func (r *run) healAll() {
	if err := r.fw.heal(); err != nil {
		r.col.note("heal: %v", err)
	}
	if err := r.fw.healZK(); err != nil {
		r.col.note("heal: ZooKeeper cut: %v", err)
	}
	if err := r.c.StartZooKeeper(context.Background()); err != nil {
		r.col.note("heal: start ZooKeeper: %v", err)
	}
	for _, d := range r.daemons {
		if inc := d.current(); inc != nil {
			_ = inc.cmd.Process.Signal(syscall.SIGCONT)
		} else if err := r.start(d, false); err != nil {
			r.col.note("heal: start daemon %d: %v", d.idx, err)
		}
	}
}
