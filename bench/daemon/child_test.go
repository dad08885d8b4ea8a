package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// result is one pass of one side.
type result struct {
	want   int64         // messages the pass waited for
	total  time.Duration // process start -> the want-th message out
	first  time.Duration // process start -> the first message out
	cpu    time.Duration // user+sys of the process and the children it waited for, over its whole life
	term   time.Duration // SIGTERM -> exit
	exit   string        // exit status ("0", "143"), or "signal: ...", "killed after ..."
	killed bool          // it did not exit within -term-timeout of SIGTERM
}

// rate is messages per second from the process start to the last one.
func (r result) rate() float64 { return float64(r.want) / r.total.Seconds() }

// steadyRate is messages per second from the first message to the last
// (startup and group join left out).
func (r result) steadyRate() float64 {
	return float64(r.want-1) / (r.total - r.first).Seconds()
}

// cpuPerMsg is the process's CPU per message, in microseconds.
func (r result) cpuPerMsg() float64 { return float64(r.cpu.Microseconds()) / float64(r.want) }

// child is one consumer process of a pass.
type child struct {
	argv    []string
	env     []string // nil: this process's environment
	stdout  bool     // count stdout lines into p (else stdout is /dev/null)
	logPath string   // its stderr
	onStart func()   // nil, or called once the process started (before anything was counted)
	// slack: stdout lines the process may keep in its own buffer until it
	// exits (kcat's stdio buffer on a pipe: up to 4 KiB). Once stderrEnd
	// recognises, in the process's stderr, that it read every partition
	// to its end, the pass ends when all but slack lines are out; the
	// rest must come by the exit.
	slack     int64
	stderrEnd func(p *progress) io.Writer // nil: none
}

// run starts c, waits until p reaches its count (stdout lines, or what
// the caller counts meanwhile), then sends SIGTERM and waits for the exit
// (SIGKILL after termTimeout). It fails when the process exits first or
// the count is not reached within timeout. p.start is called here.
func (c child) run(p *progress, timeout, termTimeout time.Duration) (result, error) {
	logf, err := os.Create(c.logPath)
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = c.env
	cmd.Stderr = logf
	if c.stderrEnd != nil {
		cmd.Stderr = io.MultiWriter(logf, c.stderrEnd(p))
	}
	var r, w *os.File
	if c.stdout {
		if r, w, err = os.Pipe(); err != nil {
			return result{}, err
		}
		cmd.Stdout = w
	}
	p.slack = c.slack
	p.start()
	if err := cmd.Start(); err != nil {
		if w != nil {
			w.Close()
			r.Close()
		}
		return result{}, fmt.Errorf("start %s: %w", c.argv[0], err)
	}
	if c.onStart != nil {
		c.onStart()
	}
	readDone := make(chan struct{})
	if w != nil {
		w.Close()
		go func() {
			defer close(readDone)
			defer r.Close()
			countLines(r, p)
		}()
	} else {
		close(readDone)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()
	kill := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.After(timeout)
	stalled := time.NewTicker(*flagStallTimeout)
	defer stalled.Stop()
	last := int64(-1)
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-stalled.C:
			if n := p.count(); n != last {
				last = n
				continue
			}
			kill()
			<-readDone
			return result{}, fmt.Errorf("%d of %d messages, none for %v; stderr %s:\n%s",
				p.count(), p.want, *flagStallTimeout, c.logPath, tail(c.logPath, 15))
		case <-exited:
			<-readDone
			return result{}, fmt.Errorf("%s exited (%v) after %d of %d messages; stderr %s:\n%s",
				c.argv[0], cmd.ProcessState, p.count(), p.want, c.logPath, tail(c.logPath, 15))
		case <-deadline:
			kill()
			<-readDone
			return result{}, fmt.Errorf("%d of %d messages within %v; stderr %s:\n%s",
				p.count(), p.want, timeout, c.logPath, tail(c.logPath, 15))
		}
	}
	res := result{want: p.want, total: time.Duration(p.last.Load()), first: time.Duration(p.first.Load())}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return result{}, err
	}
	select {
	case <-exited:
		res.term = time.Since(sent)
	case <-time.After(termTimeout):
		res.term = time.Since(sent)
		res.killed = true
		kill()
	}
	select {
	case <-readDone:
	case <-time.After(5 * time.Second): // a grandchild holding stdout open
	}
	if n := p.count(); n < p.want {
		return result{}, fmt.Errorf("%s exited (%v) after %d of %d messages", c.argv[0], cmd.ProcessState, n, p.want)
	}
	res.exit = exitStatus(cmd.ProcessState)
	if res.killed {
		res.exit = fmt.Sprintf("killed after %v", termTimeout)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return res, nil
}

// exitStatus is the exit code, or the signal that ended the process.
func exitStatus(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprint(ps.ExitCode())
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
