package daemon

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

var (
	flagRounds       = flag.Int("rounds", 3, "rounds (each side once per round, the order rotating by one each round)")
	flagSides        = flag.String("sides", "all", "comma-separated sides, or all (see ../README.md)")
	flagMessages     = flag.Int64("messages", 1_000_000, "messages in the topic; each side but the per-message ones waits for all")
	flagSlow         = flag.Int64("slow-messages", 20_000, "messages the per-message HTTP sides wait for")
	flagExecSlow     = flag.Int64("exec-messages", 5_000, "messages the per-message exec side waits for (a process per message)")
	flagPartitions   = flag.Int("partitions", 8, "partitions of the topic")
	flagTopic        = flag.String("topic", "", "topic (empty: bench-daemon-<partitions>x<messages>); reused when it holds exactly -messages messages")
	flagHTTPDelay    = flag.Duration("http-delay", time.Millisecond, "what the endpoint of the zkgroup-http-*-1ms sides waits per request")
	flagBin          = flag.String("bin", "", "zkgroup binary to run (empty: go build ./cmd/zkgroup of this checkout)")
	flagDir          = flag.String("dir", "", "folder for configs and the children's stderr (empty: a temporary one, removed at the end)")
	flagWarmup       = flag.Bool("warmup", true, "read the topic once through with zkgroup-stdout, untimed, before the rounds")
	flagPassTimeout  = flag.Duration("pass-timeout", 10*time.Minute, "bound of one pass")
	flagTermTimeout  = flag.Duration("term-timeout", 30*time.Second, "SIGKILL a side this long after SIGTERM")
	flagStallTimeout = flag.Duration("stall-timeout", time.Minute, "fail a pass whose count did not move for this long")
)

const valueLen = 100

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// BenchmarkDaemon reads one topic (1,000,000 × 100 B over 8 partitions)
// from the oldest offset in a fresh group per pass, with each side once
// per round, and prints throughput, CPU per message of the side's
// process, the first message's latency, and how it ends on SIGTERM. See
// ../README.md.
//
//	go test -run='^$' -bench=BenchmarkDaemon -benchtime=1x -timeout=120m ./daemon/ -args -rounds=3
func BenchmarkDaemon(b *testing.B) {
	sds, err := selectSides(*flagSides)
	if err != nil {
		b.Fatal(err)
	}
	dir := *flagDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "bench-daemon-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	bin := *flagBin
	if bin == "" {
		if bin, err = buildDaemon(dir); err != nil {
			b.Fatal(err)
		}
	}
	cl := benchkit.Cluster(b)
	topic := benchkit.PrefilledTopic(b, cl, *flagTopic, "daemon", *flagPartitions, *flagMessages, valueLen)
	admin, err := sarama.NewClusterAdmin(cl.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	ends, err := cl.HighWaterMarks(topic)
	if err != nil {
		b.Fatal(err)
	}
	env := &benchEnv{cl: cl, topic: topic, partitions: *flagPartitions, ends: ends, bin: bin, dir: dir, admin: admin, env: childEnv()}

	// Which sides can run here.
	var ready []side
	passes := map[string]passFunc{}
	for _, sd := range sds {
		pass, note, err := sd.setup(env)
		switch {
		case errors.Is(err, errMissing):
			benchkit.Say("   %-26s MISSING: %v", sd.name, err)
			if os.Getenv("CI") == "true" {
				b.Fatalf("%s: %v (CI=true: every side must run)", sd.name, err)
			}
			continue
		case err != nil:
			b.Fatalf("%s: %v", sd.name, err)
		}
		if note != "" {
			benchkit.Say("   %-26s %s", sd.name, note)
		}
		ready = append(ready, sd)
		passes[sd.name] = pass
	}
	seq := 0
	pass := func(sd side, round int) (result, error) {
		seq++
		want := min(*flagMessages, sd.messages())
		pe := passEnv{benchEnv: env, want: want,
			group: fmt.Sprintf("bench-daemon-%s-%d-%d", sd.name, os.Getpid(), seq),
			file:  fmt.Sprintf("%s-r%d", sd.name, round)}
		return passes[sd.name](pe)
	}
	if *flagWarmup {
		for _, sd := range allSides() {
			if sd.name == "zkgroup-stdout" {
				if passes[sd.name] == nil {
					passes[sd.name], _, _ = sd.setup(env)
				}
				if _, err := pass(sd, 0); err != nil {
					b.Fatalf("warm-up: %v", err)
				}
			}
		}
	}
	benchkit.Say("== BenchmarkDaemon: topic %s: %d messages of %d B over %d partitions (per-message HTTP: %d, exec: %d); %d round(s); sides %v; binary %s; load average %s",
		topic, *flagMessages, valueLen, *flagPartitions, min(*flagSlow, *flagMessages), min(*flagExecSlow, *flagMessages), *flagRounds, sideNames(ready), bin, benchkit.LoadAvg())
	got := map[string][]result{}
	b.ResetTimer()
	benchkit.Rounds(b, b.N, *flagRounds, ready, func(sd side) string { return sd.name }, pass, func(sd side, round int, res result) {
		got[sd.name] = append(got[sd.name], res)
		benchkit.Say("   round %d %-26s %8d msgs %9.0f msgs/s (from the first %9.0f)  cpu %6.2f µs/msg  first %7.1f ms  SIGTERM: exit %s in %.2f s  load %s",
			round, sd.name, res.want, res.rate(), res.steadyRate(), res.cpuPerMsg(), ms(res.first), res.exit, res.term.Seconds(), benchkit.LoadAvg())
	})
	b.StopTimer()
	summarize(b, ready, got)
}

// buildDaemon builds ./cmd/zkgroup of the main module into dir.
func buildDaemon(dir string) (string, error) {
	bin := filepath.Join(dir, "zkgroup")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/zkgroup")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/zkgroup: %v\n%s", err, out)
	}
	return bin, nil
}

// selectSides picks the sides named in list ("all": every side).
func selectSides(list string) ([]side, error) {
	all := allSides()
	if list == "all" {
		return all, nil
	}
	var out []side
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, s := range all {
			if s.name == strings.TrimSpace(name) {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-sides: unknown side %q; sides: %s", name, strings.Join(sideNames(all), ","))
		}
	}
	return out, nil
}

func sideNames(sds []side) []string {
	var n []string
	for _, s := range sds {
		n = append(n, s.name)
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
