package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

const validYAML = `group: g1
zookeeper: "127.0.0.1:2181/kafka"
subscription: "static:a,b"
partition:
  max_unacked: 50
  commit_interval: 250ms
`

// changed loads validYAML and applies set to it.
func changed(t *testing.T, set func(*Config)) *Config {
	t.Helper()
	c := load(t, validYAML, nil)
	set(c)
	return c
}

// load loads the file body, the variables of environ and the flags, as
// run does, and fails the test on an error.
func load(t *testing.T, body string, environ map[string]string, flags ...string) *Config {
	t.Helper()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	ov := RegisterFlags(fs)
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{File: writeFile(t, body), Lookup: env(environ), Flags: ov})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// consumer validates c and returns the consumer's configuration built
// from it, failing the test on an error.
func consumer(t *testing.T, c *Config) *manager.Config {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m, _, err := c.Manager(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refusal is a change to a valid configuration that Validate must refuse
// with a *FieldError naming field.
type refusal struct {
	field string
	set   func(*Config)
}

// assertRefused checks each refusal: a *FieldError for its field, wrapping
// ErrConfig, whose text names the field and stays under 1000 bytes.
func assertRefused(t *testing.T, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := changed(t, tc.set)
			err := c.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", fe.Field, tc.field, err)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) || len(err.Error()) > 1000 {
				t.Errorf("error %.1000q", err)
			}
		})
	}
}

// writeFile writes a configuration file and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	return writeTemp(t, "zkgroup.yaml", body)
}

// writeTemp writes body (mode 0600) to a file called name in a new
// temporary directory and returns its path.
func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadValid(t *testing.T) {
	c := load(t, validYAML, nil)
	m := consumer(t, c)
	if c.Group != "g1" || c.Partition.MaxUnacked != 50 || c.Partition.CommitInterval != 250*time.Millisecond {
		t.Fatalf("loaded %+v", c)
	}
	if c.Sink.Type != SinkStdout || c.SessionTimeout.D() != 10*time.Second {
		t.Fatalf("defaults lost: %+v", c)
	}
	if got := c.Origin("partition.max_unacked"); got != "zkgroup.yaml line 5" {
		t.Fatalf("origin = %q", got)
	}
	if got := c.Origin("strategy"); got != "default" {
		t.Fatalf("origin = %q", got)
	}
	_, sub, err := c.Manager(nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Mode != "partitions" || m.Partition.MaxUnacked != 50 || sub.String() != "static:a,b" {
		t.Fatalf("manager config %+v %v", m, sub)
	}
}

func TestPrecedence(t *testing.T) {
	c := load(t, validYAML,
		map[string]string{"ZKGROUP_GROUP": "from-env", "ZKGROUP_PARTITION_MAX_UNACKED": "9", "ZKGROUP_SINK_EXEC_COMMAND": "/bin/echo a b"},
		"--partition-max-unacked", "7", "--brokers", "h1:9092, h2:9092")
	if c.Group != "from-env" || c.Origin("group") != "env ZKGROUP_GROUP" {
		t.Errorf("group %q from %q", c.Group, c.Origin("group"))
	}
	if c.Partition.MaxUnacked != 7 || c.Origin("partition.max_unacked") != "flag --partition-max-unacked" {
		t.Errorf("max_unacked %d from %q", c.Partition.MaxUnacked, c.Origin("partition.max_unacked"))
	}
	if strings.Join(c.Brokers, "|") != "h1:9092|h2:9092" {
		t.Errorf("brokers %q", c.Brokers)
	}
	if strings.Join(c.Sink.Exec.Command, "|") != "/bin/echo|a|b" {
		t.Errorf("command %q", c.Sink.Exec.Command)
	}
	if c.ZooKeeper != "127.0.0.1:2181/kafka" {
		t.Errorf("file value lost: %q", c.ZooKeeper)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"unknown top-level key", validYAML + "grup: x\n", nil, []string{"line 7", `unknown key "grup"`, "valid keys at the top level"}},
		{"unknown nested key", validYAML + "sink:\n  tpye: exec\n", nil, []string{"line 8", `unknown key "tpye"`, "under sink"}},
		{"bad duration", "group: g\nsession_timeout: 10 seconds\n", nil, []string{"line 2", "session_timeout", `"10 seconds" is not a duration`}},
		{"bare number duration", "session_timeout: 10\n", nil, []string{"line 1", "session_timeout"}},
		{"wrong type", "partition:\n  max_unacked: lots\n", nil, []string{"line 2", "partition.max_unacked", "lots"}},
		{"syntax", "group: [\n", nil, []string{"zkgroup.yaml"}},
		{"two documents", "group: a\n---\ngroup: b\n", nil, []string{"more than one YAML document"}},
		{"bad env int", validYAML, map[string]string{"ZKGROUP_PARTITION_MAX_UNACKED": "x"}, []string{"partition.max_unacked", "env ZKGROUP_PARTITION_MAX_UNACKED", "not an integer"}},
		{"bad env duration", validYAML, map[string]string{"ZKGROUP_SHUTDOWN_TIMEOUT": "soon"}, []string{"shutdown_timeout", "ZKGROUP_SHUTDOWN_TIMEOUT"}},
		{"bad env map", validYAML, map[string]string{"ZKGROUP_SINK_HTTP_HEADERS": "novalue"}, []string{"sink.http.headers", "k=v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Sources{File: writeFile(t, tc.yaml), Lookup: env(tc.env)})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%v does not wrap ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(Sources{File: filepath.Join(t.TempDir(), "nope.yaml")})
	if !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	assertRefused(t, []refusal{
		{"group", func(c *Config) { c.Group = "" }},
		{"group", func(c *Config) { c.Group = "a/b" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "host:99999" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "host:2181/a/../kafka" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "host:2181/a/./kafka" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "host:2181/ka\x00fka" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = "host:2181/ka\x1bfka" }},
		{"zookeeper", func(c *Config) { c.ZooKeeper = strings.Repeat("h", 1<<20) + ":2181/kafka" }},
		{"subscription", func(c *Config) { c.Subscription = "" }},
		{"subscription", func(c *Config) { c.Subscription = "whitelist:(" }},
		{"instance_id", func(c *Config) { c.InstanceID = "x/y" }},
		{"session_timeout", func(c *Config) { c.SessionTimeout = Duration(time.Second) }},
		{"strategy", func(c *Config) { c.Strategy = "random" }},
		{"admin.tls_cert_file", func(c *Config) { c.Admin.TLSCertFile = "cert.pem" }},
		{"admin.log_level_control", func(c *Config) { c.Admin.LogLevelControl = true }},
		{"admin.idle_timeout", func(c *Config) { c.Admin.IdleTimeout = Duration(-time.Second) }},
		{"offset_storage", func(c *Config) { c.OffsetStorage = "redis" }},
		{"brokers", func(c *Config) { c.Brokers = []string{"nohost"} }},
		{"partition.max_unacked", func(c *Config) { c.Partition.MaxUnacked = 0 }},
		{"partition.commit_interval", func(c *Config) { c.Partition.CommitInterval = 0 }},
		{"partition.drain_timeout", func(c *Config) { c.Partition.DrainTimeout = -1 }},
		{"partition.drain_timeout", func(c *Config) { c.Partition.DrainTimeout = time.Minute }},
		{"partition.initial", func(c *Config) { c.Partition.Initial = "middle" }},
		{"sink.type", func(c *Config) { c.Sink.Type = "kafka" }},
		{"sink.exec.command", func(c *Config) { c.Sink.Type = SinkExec }},
		{"sink.exec.timeout", func(c *Config) { c.Sink.Type = SinkExec; c.Sink.Exec.Command = []string{"x"}; c.Sink.Exec.Timeout = 0 }},
		{"sink.http.url", func(c *Config) { c.Sink.Type = SinkHTTP }},
		{"sink.http.url", func(c *Config) { c.Sink.Type = SinkHTTP; c.Sink.HTTP.URL = "ftp://x/" }},
		{"sink.http.headers", func(c *Config) {
			c.Sink.Type = SinkHTTP
			c.Sink.HTTP.URL = "http://x/"
			c.Sink.HTTP.Headers = map[string]string{"Bad Name": "v"}
		}},
		{"sink.http.headers", func(c *Config) {
			c.Sink.Type, c.Sink.HTTP.URL = SinkHTTP, "http://x/"
			c.Sink.HTTP.Headers = map[string]string{"X-Token": "abc\r\nX-Evil: 1"}
		}},
		{"sink.http.headers", func(c *Config) {
			c.Sink.Type, c.Sink.HTTP.URL = SinkHTTP, "http://x/"
			c.Sink.HTTP.Headers = map[string]string{"X-Token": "a\x00b"}
		}},
		{"sink.http.headers", func(c *Config) {
			c.Sink.Type, c.Sink.HTTP.URL = SinkHTTP, "http://x/"
			c.Sink.HTTP.Headers = map[string]string{"X-Tok\x7fen": "v"}
		}},
		{"sink.http.mode", func(c *Config) { c.Sink.HTTP.Mode = "stream" }},
		{"sink.http.mode", func(c *Config) { c.Sink.HTTP.Mode = "" }},
		{"sink.exec.mode", func(c *Config) { c.Sink.Exec.Mode = "batches" }},
		{"sink.http.batch.max_messages", func(c *Config) { c.Sink.HTTP.Batch.MaxMessages = 0 }},
		{"sink.http.batch.max_bytes", func(c *Config) { c.Sink.HTTP.Batch.MaxBytes = -1 }},
		{"sink.http.batch.linger", func(c *Config) { c.Sink.HTTP.Batch.Linger = -1 }},
		{"sink.http.max_in_flight", func(c *Config) { c.Sink.HTTP.MaxInFlight = 0 }},
		{"sink.exec.batch.max_messages", func(c *Config) { c.Sink.Exec.Batch.MaxMessages = 0 }},
		{"sink.exec.batch.max_bytes", func(c *Config) { c.Sink.Exec.Batch.MaxBytes = 0 }},
		{"sink.exec.batch.linger", func(c *Config) { c.Sink.Exec.Batch.Linger = Duration(-time.Millisecond) }},
		{"sink.retry.max_attempts", func(c *Config) { c.Sink.Retry.MaxAttempts = 0 }},
		{"sink.retry.initial_backoff", func(c *Config) { c.Sink.Retry.InitialBackoff = 0 }},
		{"sink.retry.max_backoff", func(c *Config) { c.Sink.Retry.MaxBackoff = Duration(time.Millisecond) }},
		{"sink.on_failure", func(c *Config) { c.Sink.OnFailure = "retry-forever" }},
		{"sink.dead_letter_topic", func(c *Config) { c.Sink.OnFailure = OnFailureDeadLetter }},
		{"sink.dead_letter_topic", func(c *Config) { c.Sink.OnFailure = OnFailureDeadLetter; c.Sink.DeadLetterTopic = "a" }},
		{"sink.dead_letter_topic", func(c *Config) { c.Sink.OnFailure = OnFailureDeadLetter; c.Sink.DeadLetterTopic = "bad topic" }},
		{"admin.listen", func(c *Config) { c.Admin.Listen = "9090" }},
		{"log.format", func(c *Config) { c.Log.Format = "xml" }},
		{"log.level", func(c *Config) { c.Log.Level = "loud" }},
		{"shutdown_timeout", func(c *Config) { c.ShutdownTimeout = 0 }},
		{"zookeeper_start_timeout", func(c *Config) { c.ZooKeeperStartTimeout = Duration(-time.Second) }},
		{"zookeeper_start_timeout", func(c *Config) { c.ZooKeeperStartTimeout = Duration(time.Millisecond) }},
		{"kafka_unreachable_timeout", func(c *Config) { c.KafkaUnreachableTimeout = Duration(time.Second) }},
		{"kafka_unreachable_timeout", func(c *Config) { c.KafkaUnreachableTimeout = Duration(-time.Second) }},
		{"kafka_unreachable_timeout", func(c *Config) { c.KafkaUnreachableTimeout = Duration(time.Hour) }},
		{"zookeeper_max_reply", func(c *Config) { c.ZooKeeperMaxReply = -1 }},
		{"zookeeper_max_reply", func(c *Config) { c.ZooKeeperMaxReply = 1000 }},
		{"zookeeper_max_reply", func(c *Config) { c.ZooKeeperMaxReply = 5 << 20 }},
	})
}

func TestValidateNamesOrigin(t *testing.T) {
	err := load(t, validYAML+"session_timeout: 2s\n", nil).Validate()
	if err == nil || !strings.Contains(err.Error(), `session_timeout: must be at least 6s (value "2s", from zkgroup.yaml line 7)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestFields(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Fields() {
		if seen[f.Env] || seen[f.Flag] {
			t.Errorf("duplicate %s / %s", f.Env, f.Flag)
		}
		seen[f.Env], seen[f.Flag] = true, true
	}
	for _, want := range []string{"ZKGROUP_GROUP", "ZKGROUP_ZOOKEEPER", "ZKGROUP_PARTITION_MAX_UNACKED", "ZKGROUP_SINK_HTTP_URL", "admin-listen", "sink-retry-max-attempts"} {
		if !seen[want] {
			t.Errorf("no field %s", want)
		}
	}
}

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{"ZKGROUP_GROUP=x", "ZKGROUP_GRUOP=y", "PATH=/bin", "ZKGROUP_CONFIG=f", "ZKGROUP_TOPIC=t"})
	if strings.Join(got, ",") != "ZKGROUP_GRUOP" {
		t.Fatalf("UnknownEnv = %v", got)
	}
}

func TestOverridesSet(t *testing.T) {
	var ov Overrides
	if err := ov.Set("nope", "x"); !errors.Is(err, ErrConfig) {
		t.Fatalf("Set unknown = %v", err)
	}
	if err := ov.Set("group", "g"); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{Flags: &ov})
	if err != nil || c.Group != "g" {
		t.Fatalf("%v %+v", err, c)
	}
}

// FuzzLoadYAML: no input makes the loader panic; an accepted document
// re-validates without panicking and errors wrap ErrConfig.
func FuzzLoadYAML(f *testing.F) {
	f.Add([]byte(validYAML))
	f.Add([]byte("group: [\n"))
	f.Add([]byte("sink:\n  http:\n    headers: {a: b}\n"))
	f.Add([]byte("partition: 3\n"))
	f.Add([]byte("session_timeout: !!binary abc\n"))
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Add([]byte("partition:\n  max_unacked: 1.5\n"))
	f.Add([]byte("group: a\ngroup: b\n"))
	f.Add([]byte("x: 1\ny: 2\nz: 3\nw: 4\n"))
	f.Add([]byte("kafka:\n  tls: {enable: yes}\n  sasl: {mechanism: PLAIN, username: u, password_env: P}\n"))
	f.Add([]byte("zookeeper_auth: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Default()
		c.origins = map[string]string{}
		err := c.applyYAML("f.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if err := c.Validate(); err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("Validate error %v does not wrap ErrConfig", err)
		}
	})
}

// TestSinkModes: the exec and http sinks deliver per message unless their
// mode says batch; the batch limits and the request bound have their
// documented defaults and load from the file, variables and flags.
func TestSinkModes(t *testing.T) {
	d := Default().Sink
	if d.HTTP.Mode != ModeMessage || d.Exec.Mode != ModeMessage {
		t.Errorf("default modes %q %q", d.HTTP.Mode, d.Exec.Mode)
	}
	if want := (HTTPBatch{MaxMessages: 500, MaxBytes: 512 << 10, Linger: Duration(5 * time.Millisecond)}); d.HTTP.Batch != want || d.HTTP.MaxInFlight != 8 {
		t.Errorf("http defaults %+v, max_in_flight %d", d.HTTP.Batch, d.HTTP.MaxInFlight)
	}
	if want := (ExecBatch{MaxMessages: 1000, MaxBytes: 1 << 20, Linger: Duration(10 * time.Millisecond)}); d.Exec.Batch != want {
		t.Errorf("exec defaults %+v", d.Exec.Batch)
	}
	file := validYAML + `sink:
  type: http
  http:
    url: "http://127.0.0.1:8080/in"
    mode: batch
    batch:
      max_messages: 200
      linger: 0s
  exec:
    mode: batch
    batch:
      max_bytes: 4096
`
	c := load(t, file, map[string]string{"ZKGROUP_SINK_HTTP_BATCH_MAX_BYTES": "65536"},
		"--sink-http-max-in-flight", "32", "--sink-exec-batch-linger", "20ms")
	consumer(t, c)
	h, e := c.Sink.HTTP, c.Sink.Exec
	if h.Mode != ModeBatch || h.Batch != (HTTPBatch{MaxMessages: 200, MaxBytes: 65536}) || h.MaxInFlight != 32 {
		t.Errorf("http %+v", h)
	}
	if e.Mode != ModeBatch || e.Batch != (ExecBatch{MaxMessages: 1000, MaxBytes: 4096, Linger: Duration(20 * time.Millisecond)}) {
		t.Errorf("exec %+v", e)
	}
}
