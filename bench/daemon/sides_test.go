package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// errMissing marks a side that cannot run here: a tool not installed, or
// a daemon that refuses the side's config (a sink mode it does not have).
var errMissing = errors.New("side missing")

// benchEnv is what every pass of a run shares.
type benchEnv struct {
	cl         *testcluster.Cluster
	topic      string
	partitions int
	ends       map[int32]int64 // the topic's end offset per partition
	bin        string          // the zkgroup binary
	dir        string          // configs and the children's stderr
	admin      sarama.ClusterAdmin
	env        []string // the children's environment (no ZKGROUP_*)
}

// passEnv is one pass: a fresh group, the messages to wait for, and a
// name for its files.
type passEnv struct {
	*benchEnv
	group string
	file  string // base name of its config and stderr files
	want  int64
}

func (pe passEnv) path(ext string) string { return filepath.Join(pe.dir, pe.file+ext) }

// passFunc runs one pass of a side.
type passFunc func(pe passEnv) (result, error)

// side is one way of reading the topic through.
type side struct {
	name string
	slow bool   // reads only -slow-messages (-exec-messages for exec): a per-message sink
	base string // the side its ratios are taken against ("" none)
	// setup checks once that the side can run here (wrapping errMissing
	// when not) and returns its pass and a note to print.
	setup func(b *benchEnv) (passFunc, string, error)
}

// messages is how many messages a pass of the side waits for (at most
// -messages).
func (s side) messages() int64 {
	switch {
	case s.slow && strings.Contains(s.name, "exec"):
		return *flagExecSlow
	case s.slow:
		return *flagSlow
	}
	return *flagMessages
}

// allSides in the order of the first round. The delayed HTTP sides are
// named after -http-delay (zkgroup-http-batch-1ms).
func allSides() []side {
	d := flagHTTPDelay.String()
	return []side{
		{name: "zkgroup-stdout", base: "kcat", setup: setupStdout},
		{name: "kcat", setup: setupKcat},
		{name: "console", base: "kcat", setup: setupConsole},
		{name: "zkgroup-http-batch", base: "zkgroup-http-message", setup: setupHTTP("batch", 0)},
		{name: "zkgroup-http-message", slow: true, setup: setupHTTP("message", 0)},
		{name: "zkgroup-http-batch-" + d, base: "zkgroup-http-message-" + d, setup: setupHTTP("batch", *flagHTTPDelay)},
		{name: "zkgroup-http-message-" + d, slow: true, setup: setupHTTP("message", *flagHTTPDelay)},
		{name: "zkgroup-exec-batch", base: "zkgroup-exec-message", setup: setupExec("batch")},
		{name: "zkgroup-exec-message", slow: true, setup: setupExec("message")},
	}
}

func (b *benchEnv) config(group string) daemonConfig {
	return daemonConfig{group: group, zookeeper: b.cl.ZooKeeperConnect(), topic: b.topic, sink: "stdout"}
}

// daemon runs `zkgroup run --config` with c, counting its stdout lines
// when stdout.
func (pe passEnv) daemon(c daemonConfig, stdout bool, p *progress, onStart func()) (result, error) {
	cfgPath := pe.path(".yaml")
	if err := c.write(cfgPath); err != nil {
		return result{}, err
	}
	ch := child{argv: []string{pe.bin, "run", "--config", cfgPath}, env: pe.env, stdout: stdout, logPath: pe.path(".stderr"), onStart: onStart}
	return ch.run(p, *flagPassTimeout, *flagTermTimeout)
}

func setupStdout(_ *benchEnv) (passFunc, string, error) {
	return func(pe passEnv) (result, error) {
		return pe.daemon(pe.config(pe.group), true, newProgress(pe.want), nil)
	}, "", nil
}

func setupKcat(_ *benchEnv) (passFunc, string, error) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		return nil, "", fmt.Errorf("%w: kcat not found (Debian: apt-get install -y kcat): %v", errMissing, err)
	}
	return func(pe passEnv) (result, error) {
		// -o beginning: with -G it sets auto.offset.reset, which a fresh
		// group needs to read from the oldest offset.
		ch := child{argv: []string{kcat, "-G", pe.group, "-J", "-b", strings.Join(pe.cl.Addrs(), ","), "-o", "beginning", pe.topic},
			env: pe.env, stdout: true, logPath: pe.path(".stderr"),
			slack: kcatSlack, stderrEnd: newKcatEnd(pe.topic, pe.ends)}
		return ch.run(newProgress(pe.want), *flagPassTimeout, *flagTermTimeout)
	}, kcat, nil
}

// kcatSlack: kcat writes stdout through stdio, fully buffered on a pipe
// (4 KiB): its last lines come out when it exits. A -J line of this topic
// is over 200 bytes, so at most ~20 lines wait in the buffer. Its pass
// ends when its stderr says every partition reached its end and all but
// kcatSlack lines are out (kcatEnd).
const kcatSlack = 64

// consoleMain is kafka-console-consumer.sh's main class in Kafka 3.9.
const consoleMain = "org.apache.kafka.tools.consumer.ConsoleConsumer"

// toolsLog4j is Kafka's config/tools-log4j.properties: WARN and above to
// stderr.
const toolsLog4j = `log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
`

// setupConsole runs the console consumer from the test cluster's jars
// the way kafka-console-consumer.sh does (its heap, kafka-run-class.sh's
// JVM options, the tools' log4j config).
func setupConsole(b *benchEnv) (passFunc, string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "", fmt.Errorf("%w: java not found: %v", errMissing, err)
	}
	lib := b.cl.LibDir()
	if jars, _ := filepath.Glob(filepath.Join(lib, "kafka-tools-*.jar")); len(jars) == 0 {
		return nil, "", fmt.Errorf("%w: no kafka-tools jar in %q", errMissing, lib)
	}
	log4j := filepath.Join(b.dir, "tools-log4j.properties")
	if err := os.WriteFile(log4j, []byte(toolsLog4j), 0o644); err != nil {
		return nil, "", err
	}
	return func(pe passEnv) (result, error) {
		argv := []string{java, "-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
			"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
			"-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + log4j,
			"-cp", filepath.Join(lib, "*"), consoleMain,
			"--bootstrap-server", strings.Join(pe.cl.Addrs(), ","), "--topic", pe.topic,
			"--group", pe.group, "--from-beginning"}
		ch := child{argv: argv, env: pe.env, stdout: true, logPath: pe.path(".stderr")}
		return ch.run(newProgress(pe.want), *flagPassTimeout, *flagTermTimeout)
	}, "java -cp " + filepath.Join(lib, "*") + " " + consoleMain, nil
}

// checkMode finds the config a mode side runs with: sink.<type>.mode set
// to mode if the daemon accepts it; for "message" on a daemon without the
// field, the field left out (its only mode then). A batch side on such a
// daemon is missing.
func checkMode(b *benchEnv, c daemonConfig) (daemonConfig, string, error) {
	path := filepath.Join(b.dir, "check-"+c.sink+"-"+c.mode+".yaml")
	if err := c.write(path); err != nil {
		return c, "", err
	}
	err := validate(b.bin, path, b.env)
	if err == nil {
		return c, "", nil
	}
	if c.mode != "message" {
		return c, "", fmt.Errorf("%w: the daemon refuses sink.%s.mode: %s: %v", errMissing, c.sink, c.mode, err)
	}
	c.mode = ""
	if err := c.write(path); err != nil {
		return c, "", err
	}
	if err2 := validate(b.bin, path, b.env); err2 != nil {
		return c, "", fmt.Errorf("%w: the daemon refuses the %s sink config: %v", errMissing, c.sink, err2)
	}
	return c, fmt.Sprintf("the daemon has no sink.%s.mode: its per-message sink (%v)", c.sink, err), nil
}

// setupHTTP is a side of the HTTP sink in mode against the counting
// endpoint, which adds delay to every request.
func setupHTTP(mode string, delay time.Duration) func(b *benchEnv) (passFunc, string, error) {
	return func(b *benchEnv) (passFunc, string, error) {
		c := b.config("check")
		c.sink, c.mode, c.url = "http", mode, "http://127.0.0.1:1/"
		c, note, err := checkMode(b, c)
		if err != nil {
			return nil, "", err
		}
		return func(pe passEnv) (result, error) {
			p := newProgress(pe.want)
			srv := startHTTPCounter(&httpCounter{p: p, ndjson: mode == "batch", delay: delay})
			defer srv.Close()
			pc := c
			pc.group, pc.url = pe.group, srv.URL+"/ingest"
			return pe.daemon(pc, false, p, nil)
		}, note, nil
	}
}

// execCommand is the exec sides' command: it reads its stdin and drops it.
var execCommand = []string{"sh", "-c", "cat > /dev/null"}

// setupExec is a side of the exec sink in mode running execCommand. What
// it consumed is counted from the group's committed offsets (polled every
// 50 ms), so its daemon commits every 100 ms, not every second.
func setupExec(mode string) func(b *benchEnv) (passFunc, string, error) {
	return func(b *benchEnv) (passFunc, string, error) {
		c := b.config("check")
		c.sink, c.mode, c.command, c.commitInterval = "exec", mode, execCommand, "100ms"
		c, note, err := checkMode(b, c)
		if err != nil {
			return nil, "", err
		}
		return func(pe passEnv) (result, error) {
			p := newProgress(pe.want)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			poll := func() {
				wg.Go(func() { pollCommitted(ctx, pe.admin, pe.group, pe.topic, pe.partitions, p, 50*time.Millisecond) })
			}
			pc := c
			pc.group = pe.group
			return pe.daemon(pc, false, p, poll)
		}, note, nil
	}
}
