package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one JVM (ZooKeeper or a broker). It is safe for concurrent use.
type process struct {
	name    string
	dir     string // working folder: config, logs, data
	args    []string
	env     []string
	detach  bool   // survive the Go process (cluster-up); no parent-death signal
	logPath string // stdout and stderr of the JVM
	appLog  string // the log4j file, for tails
	// gid, when not 0, is the group id the JVM runs with (its uid stays
	// this process's): an iptables owner match (--gid-owner) then tells
	// its packets from those of the other JVMs. Root only.
	gid uint32

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

func newProcess(name, dir string, detach bool, env []string, args ...string) *process {
	return &process{name: name, dir: dir, args: args, env: env, detach: detach,
		logPath: filepath.Join(dir, name+".out")}
}

// start launches the JVM; its stdout and stderr are appended to logPath.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("testcluster: %s is already running (pid %d)", p.name, p.cmd.Process.Pid)
		}
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testcluster: %s: log: %w", p.name, err)
	}
	cmd := exec.Command("java", p.args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that a terminal's ^C reaches only the Go
	// process, which then stops the JVMs in order. Unless detached, the kernel
	// kills the JVM when the thread that started it dies (the test binary was
	// killed or timed out), so no java process outlives a test run.
	attr := &syscall.SysProcAttr{Setpgid: true}
	if !p.detach {
		attr.Pdeathsig = syscall.SIGKILL
	}
	if p.gid != 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(os.Getuid()), Gid: p.gid}
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("testcluster: start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.exitErr = cmd, exited, nil
	go func() {
		err := cmd.Wait()
		log.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// pid returns the running JVM's pid, or 0.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	select {
	case <-p.exited:
		return 0
	default:
		return p.cmd.Process.Pid
	}
}

// running reports whether the JVM is alive.
func (p *process) running() bool { return p.pid() != 0 }

// done returns a channel closed when the current JVM has exited (nil if never started).
func (p *process) done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// signal sends sig to the JVM's process group and waits up to grace for it
// to exit; then it sends SIGKILL and waits for the exit. It returns once the
// process is gone.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	if sig != syscall.SIGKILL {
		select {
		case <-exited:
			return nil
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("testcluster: %s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}

// noise is log lines a tail leaves out: ZooKeeper warns of every
// connection from go-zookeeper (it speaks the protocol without the
// read-only flag), which would fill a tail of a busy test.
var noise = []string{"Connection request from old client"}

// tail returns the last n lines of the process log, for failure messages,
// without the noise.
func (p *process) tail(n int) string {
	out, _ := os.ReadFile(p.logPath)
	app, _ := os.ReadFile(p.appLog)
	b := append(out, app...)
	lines := slices.DeleteFunc(strings.Split(strings.TrimRight(string(b), "\n"), "\n"), func(l string) bool {
		return slices.ContainsFunc(noise, func(s string) bool { return strings.Contains(l, s) })
	})
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exitError returns why the JVM exited, if it has.
func (p *process) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return errors.New("never started")
	}
	select {
	case <-p.exited:
		if p.exitErr == nil {
			return errors.New("exited with status 0")
		}
		return p.exitErr
	default:
		return nil
	}
}

// jvmArgs returns the common JVM flags: a small heap and a log4j config.
func jvmArgs(lib, dir string, heapMB int) []string {
	return []string{
		fmt.Sprintf("-Xms%dm", heapMB/4),
		fmt.Sprintf("-Xmx%dm", heapMB),
		"-XX:+UseSerialGC",
		// C1 only: a JVM starts with a fraction of the CPU, which matters
		// on 2 cores with 4 JVMs starting at once.
		"-XX:TieredStopAtLevel=1",
		"-XX:-UsePerfData",
		"-Djava.awt.headless=true",
		"-Dlog4j.configuration=file:" + filepath.Join(dir, "log4j.properties"),
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "log4j2.properties"),
		"-Dzookeeper.admin.enableServer=false",
		"-cp", filepath.Join(lib, "*"),
	}
}

const log4jProperties = `log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${logfile}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.log.LogCleaner=WARN
`

// log4j2Properties is the same for Kafka 4, which logs through log4j 2.
const log4j2Properties = `status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${logfile}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.state.name = state.change.logger
logger.state.level = warn
logger.zk.name = org.apache.zookeeper
logger.zk.level = warn
`

// writeLog4j writes log4j.properties (Kafka 3.9, ZooKeeper: log4j 1 API)
// and log4j2.properties (Kafka 4: log4j 2) logging to logfile.
func writeLog4j(dir, logfile string) error {
	s := strings.ReplaceAll(log4jProperties, "${logfile}", logfile)
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(s), 0o644); err != nil {
		return err
	}
	s2 := strings.ReplaceAll(log4j2Properties, "${logfile}", logfile)
	return os.WriteFile(filepath.Join(dir, "log4j2.properties"), []byte(s2), 0o644)
}

// toolLog4j2 sends a Kafka 4 tool's errors, and nothing else, to stderr.
const toolLog4j2 = `status = error
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = error
rootLogger.appenderRef.err.ref = STDERR
`

// writeToolLog4j writes the logging configurations of the tools
// (tools-log4j.properties and tools-log4j2.properties) into dir.
func writeToolLog4j(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "tools-log4j.properties"), []byte(toolLog4j), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tools-log4j2.properties"), []byte(toolLog4j2), 0o644)
}
