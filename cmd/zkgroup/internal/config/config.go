package config

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/partition"
)

// Sink types.
const (
	SinkStdout = "stdout"
	SinkExec   = "exec"
	SinkHTTP   = "http"
)

// Failure policies: what happens to a message whose sink still fails after
// the last attempt.
const (
	// OnFailureStop leaves the message unacked and shuts the daemon down;
	// it exits non-zero after a clean shutdown.
	OnFailureStop = "stop"
	// OnFailureSkip logs and counts the message, then acks it.
	OnFailureSkip = "skip"
	// OnFailureDeadLetter produces the message to Sink.DeadLetterTopic,
	// then acks it.
	OnFailureDeadLetter = "dead-letter"
)

// RestartGrace values besides a duration.
const (
	// RestartGraceSessionTimeout, the default, keeps a stopped member's
	// partitions for the session timeout (with instance_id set).
	RestartGraceSessionTimeout = "session_timeout"
	// RestartGraceOff moves a stopped member's partitions at once.
	RestartGraceOff = "off"
)

// DefaultAdminListen is the admin server's default address: loopback
// only, on a port of its own (9090 is Prometheus' own).
const DefaultAdminListen = "127.0.0.1:9779"

// Log formats.
const (
	LogText = "text"
	LogJSON = "json"
)

// Config is the daemon's configuration. Build it with Default and Load.
// The yaml tag of each field is its key; nested keys join with "." in
// error messages, with "_" in environment variables (ZKGROUP_ prefix,
// upper case) and with "-" in flags. A plain value: safe for concurrent
// reads once loaded.
type Config struct {
	// Group is the consumer group (required).
	Group string `yaml:"group" json:"group" help:"consumer group to join (required)"`
	// ZooKeeper is the connect string "host:2181,host2:2181/chroot", with
	// the chroot of the Kafka cluster (required).
	ZooKeeper string `yaml:"zookeeper" json:"zookeeper" help:"ZooKeeper connect string host:2181,host2:2181/chroot (required)"`
	// Subscription: "static:a,b", "a,b", "whitelist:regex",
	// "blacklist:regex" (required).
	Subscription string `yaml:"subscription" json:"subscription" help:"topics: static:a,b | whitelist:regex | blacklist:regex (required)"`
	// InstanceID names this member; empty: a new id at every start.
	InstanceID string `yaml:"instance_id" json:"instance_id" help:"member id under /consumers/<group>/ids; empty: a new one at each start"`
	// RestartGrace, with InstanceID set, is how long the group keeps this
	// member's partitions, unconsumed, once it stopped (SIGTERM or a
	// crash), so that the instance started again with the same
	// instance_id gets back exactly the partitions it had and no other
	// member's assignment changes (manager.Config.RestartGrace). One of
	// RestartGraceSessionTimeout (the default: SessionTimeout),
	// RestartGraceOff (or 0s) or a duration up to
	// manager.MaxRestartGrace; see RestartGraceD.
	RestartGrace string `yaml:"restart_grace" json:"restart_grace" value:"duration|off|session_timeout" help:"with instance_id: how long the group keeps this member's partitions, unconsumed, after it stopped (SIGTERM or a crash), so that an instance started again with the same instance_id gets exactly them back and no other member moves; session_timeout (the default), a duration up to 10m, or off (also 0s): its partitions move at once; a duration needs instance_id"`
	// SessionTimeout of the ZooKeeper session, at least 6s.
	SessionTimeout Duration `yaml:"session_timeout" json:"session_timeout" help:"ZooKeeper session timeout, 6s to 2m"`
	// KafkaUnreachableTimeout: a member that no Kafka broker, or not its
	// group coordinator, answered for this long leaves the group until
	// Kafka answers again (manager.Config.KafkaUnreachableTimeout); 0:
	// 45s, or session_timeout if longer.
	KafkaUnreachableTimeout Duration `yaml:"kafka_unreachable_timeout" json:"kafka_unreachable_timeout" help:"leave the group after this long without an answer from Kafka, join again once it answers; 0: 45s (Kafka's session.timeout.ms), or session_timeout if longer, else 2s to 10m"`
	// Strategy names the assignment strategy: one of assign.Names(),
	// assign.DefaultName by default.
	Strategy string `yaml:"strategy" json:"strategy" help:"how partitions are spread over the members; every member of a group must use the same strategy"`
	// OffsetStorage: kafka or zookeeper.
	OffsetStorage string `yaml:"offset_storage" json:"offset_storage" help:"where offsets are committed: Kafka's __consumer_offsets or ZooKeeper's /consumers/<group>/offsets"`
	// Brokers overrides discovery from ZooKeeper ("host:port" each).
	Brokers []string `yaml:"brokers" json:"brokers" help:"Kafka brokers host:port,...; empty: read from /brokers/ids in ZooKeeper (required with Kafka 4 / KRaft)"`
	// Listener picks the broker endpoint by listener name during discovery.
	Listener string `yaml:"listener" json:"listener" help:"broker listener name to use from /brokers/ids (empty: PLAINTEXT)"`
	// Partition configures every owned partition.
	Partition Partition `yaml:"partition" json:"partition" help:"settings of every partition this member owns"`
	// Sink is where messages go.
	Sink Sink `yaml:"sink" json:"sink" help:"where messages go"`
	// Admin is the HTTP server for health, readiness, metrics and status.
	Admin Admin `yaml:"admin" json:"admin" help:"the admin HTTP server: /healthz (liveness), /readyz (readiness), /metrics (Prometheus), /status (JSON) and the live group page at /"`
	// Log configures the logs written to stderr.
	Log Log `yaml:"log" json:"log" help:"logs, written to stderr (stdout is the stdout sink's)"`
	// Kafka configures the Kafka clients (consumer, operator commands and
	// dead-letter producer alike): client id, protocol version, TLS, SASL.
	Kafka Kafka `yaml:"kafka" json:"kafka" help:"the Kafka clients (consumer, operator commands and dead-letter producer alike)"`
	// ZooKeeperAuth holds ZooKeeper digest credentials; with them, the
	// group's nodes get a creator-only-write ACL.
	ZooKeeperAuth ZooKeeperAuth `yaml:"zookeeper_auth" json:"zookeeper_auth" help:"ZooKeeper digest credentials; with them, the group's nodes get a creator-only-write ACL"`
	// ZooKeeperTLS connects to ZooKeeper's secure client port over TLS.
	ZooKeeperTLS TLS `yaml:"zookeeper_tls" json:"zookeeper_tls" help:"TLS to ZooKeeper's secure client port"`
	// ZooKeeperStartTimeout bounds how long `run` waits at start for
	// ZooKeeper to answer (it keeps trying, with backoff, meanwhile);
	// past it the daemon exits 1. 0 (the default) waits until ZooKeeper
	// answers or the process is stopped. Refused credentials or
	// certificates exit 3 at once either way.
	ZooKeeperStartTimeout Duration `yaml:"zookeeper_start_timeout" json:"zookeeper_start_timeout" help:"how long run waits at start for ZooKeeper to answer, then exits 1; 0: until it answers"`
	// ZooKeeperMaxReply is the longest reply ZooKeeper may send, in bytes
	// (manager.Config.ZooKeeperMaxReply, the name its errors give): 0 is
	// manager.DefaultZooKeeperMaxReply.
	ZooKeeperMaxReply int `yaml:"zookeeper_max_reply" json:"zookeeper_max_reply" help:"longest ZooKeeper reply read, in bytes, held as a buffer; the longest is usually the topic list (about 4 bytes + the name per topic); 0: 524288, else 16384 to 4194304"`
	// ShutdownTimeout bounds the shutdown after SIGTERM (drain, commit,
	// release, deregister); the daemon exits 1 if it is exceeded.
	ShutdownTimeout Duration `yaml:"shutdown_timeout" json:"shutdown_timeout" help:"bound of the shutdown after SIGTERM; exit 1 past it"`

	origins map[string]string // field path -> where its value came from
	secrets *resolved         // passwords and TLS configs read by Resolve
}

// Partition is the library's partition settings (partition.Config, the
// value manager.Config.Partition takes), under the daemon's keys: each
// key binds to the library's field, so its type and default are the
// library's. The settings the daemon has no key for keep their defaults.
type Partition struct {
	partition.Config
}

// bindings are the daemon's keys of Partition.
func (p *Partition) bindings() []binding {
	return []binding{
		{"max_unacked", "messages handed out and not yet acked, per partition", &p.MaxUnacked},
		{"commit_interval", "how often acked offsets are committed", &p.CommitInterval},
		{"drain_timeout", "wait for in-flight messages at revoke or stop; below shutdown_timeout", &p.DrainTimeout},
		{"initial", "where to start without a committed offset", &p.Initial},
	}
}

// UnmarshalYAML decodes the daemon's keys onto the library's fields.
func (p *Partition) UnmarshalYAML(n *yaml.Node) error { return decodeBound(n, p.bindings()) }

// MarshalJSON encodes the daemon's keys, durations as text.
func (p Partition) MarshalJSON() ([]byte, error) { return encodeBound(p.bindings()) }

// Sink configures message delivery.
type Sink struct {
	// Type: stdout, exec or http.
	Type string `yaml:"type" json:"type" help:"the kind of sink"`
	// Exec configures the exec sink.
	Exec Exec `yaml:"exec" json:"exec" help:"the exec sink: one process per message (the value on its stdin) or per batch (JSON lines on its stdin)"`
	// HTTP configures the http sink.
	HTTP HTTP `yaml:"http" json:"http" help:"the http sink: one POST per message (the value as the body) or per batch (JSON lines)"`
	// Retry configures the retries of a failing exec or http sink.
	Retry Retry `yaml:"retry" json:"retry" help:"retries of a failing exec or http sink: the wait doubles from initial_backoff up to max_backoff"`
	// OnFailure: stop, skip or dead-letter.
	OnFailure string `yaml:"on_failure" json:"on_failure" help:"what happens to a message after its last failed attempt"`
	// DeadLetterTopic receives messages that failed, with on_failure
	// dead-letter. It must not be matched by the subscription.
	DeadLetterTopic string `yaml:"dead_letter_topic" json:"dead_letter_topic" help:"topic for failed messages with on_failure dead-letter"`
}

// Sink modes (sink.exec.mode, sink.http.mode).
const (
	// ModeMessage delivers one message per process or request.
	ModeMessage = "message"
	// ModeBatch delivers a batch of one partition's messages per process
	// or request, as JSON lines in the stdout sink's format.
	ModeBatch = "batch"
)

// Default batch limits and request bound; Default sets them, the help of
// the fields says why.
const (
	DefaultHTTPBatchMessages = 500
	DefaultHTTPBatchBytes    = 512 << 10
	DefaultHTTPBatchLinger   = 5 * time.Millisecond
	DefaultHTTPMaxInFlight   = 8
	DefaultExecBatchMessages = 1000
	DefaultExecBatchBytes    = 1 << 20
	DefaultExecBatchLinger   = 10 * time.Millisecond
)

// Exec configures the exec sink: one process per message, the value on
// its stdin, or per batch, JSON lines on its stdin.
type Exec struct {
	// Command is the program and its arguments (no shell). In environment
	// variables and flags it is split at spaces.
	Command []string `yaml:"command" json:"command" split:"space" help:"program and arguments of the exec sink (no shell)"`
	// Timeout bounds one attempt; the process is killed after it.
	Timeout Duration `yaml:"timeout" json:"timeout" help:"bound of one exec sink attempt (a message, or a batch in batch mode); the process is killed after it"`
	// Mode: message (a process per message) or batch.
	Mode string `yaml:"mode" json:"mode" help:"message: a process per message; batch: a process per batch of one partition's messages"`
	// Batch bounds a batch in batch mode.
	Batch ExecBatch `yaml:"batch" json:"batch" help:"the batches of mode batch: a batch goes out when full, or after linger when fewer messages are waiting"`
}

// ExecBatch bounds the exec sink's batches.
type ExecBatch struct {
	MaxMessages int      `yaml:"max_messages" json:"max_messages" help:"most messages in one batch, at least 1; a thousand make the start of a process (about 1ms) a small share"`
	MaxBytes    int      `yaml:"max_bytes" json:"max_bytes" help:"most bytes of keys, values and headers in one batch, at least 1 (a larger message goes alone); the JSON on stdin is larger"`
	Linger      Duration `yaml:"linger" json:"linger" help:"how long a partial batch waits for more messages, 0: never; 10ms is short beside a process's own run time"`
}

// HTTP configures the http sink: one POST per message or per batch.
type HTTP struct {
	// URL to POST to (http or https).
	URL string `yaml:"url" json:"url" redact:"url" help:"URL the http sink POSTs to"`
	// Timeout bounds one attempt.
	Timeout Duration `yaml:"timeout" json:"timeout" help:"bound of one http sink attempt (a message, or a batch in batch mode), not counting the wait for a free request (max_in_flight)"`
	// Headers are added to every request ("k=v,k2=v2" in environment
	// variables and flags).
	Headers map[string]string `yaml:"headers" json:"headers" help:"headers the http sink adds to every request"`
	// Mode: message (a POST per message) or batch.
	Mode string `yaml:"mode" json:"mode" help:"message: a POST per message, the value as the body; batch: a POST per batch of one partition's messages, as JSON lines"`
	// Batch bounds a batch in batch mode.
	Batch HTTPBatch `yaml:"batch" json:"batch" help:"the batches of mode batch: a batch goes out when full, or after linger when fewer messages are waiting"`
	// MaxInFlight bounds the requests open at once, all partitions
	// together, in either mode.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight" help:"requests open at once, all partitions together, at least 1, each over a kept-alive connection; in mode message a partition has one open at most: raise it to the partitions owned to keep them all busy"`
}

// HTTPBatch bounds the http sink's batches.
type HTTPBatch struct {
	MaxMessages int      `yaml:"max_messages" json:"max_messages" help:"most messages in one request, at least 1; 500 messages of 100 bytes make about 100 KB of JSON, and 200 requests carry 100,000 messages"`
	MaxBytes    int      `yaml:"max_bytes" json:"max_bytes" help:"most bytes of keys, values and headers in one request, at least 1 (a larger message goes alone); the JSON body is larger, so keep it well under the endpoint's body limit (512 KiB stays under a common 1 MiB)"`
	Linger      Duration `yaml:"linger" json:"linger" help:"how long a partial batch waits for more messages, 0: never; 5ms adds little latency when traffic is light"`
}

// Retry configures retries with exponential backoff.
type Retry struct {
	// MaxAttempts counts the first attempt; 1 means no retry.
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts" help:"sink attempts per message, counting the first"`
	// InitialBackoff is the wait after the first failure; it doubles.
	// Each wait is jittered by ±50 %.
	InitialBackoff Duration `yaml:"initial_backoff" json:"initial_backoff" help:"wait after the first failed attempt; doubles; each wait jittered by ±50 %"`
	// MaxBackoff caps the doubling wait (before the jitter).
	MaxBackoff Duration `yaml:"max_backoff" json:"max_backoff" help:"cap of the doubling wait between attempts (before the ±50 % jitter)"`
}

// Admin configures the admin HTTP server.
type Admin struct {
	// Listen is host:port; empty disables the server.
	Listen string `yaml:"listen" json:"listen" help:"admin HTTP server host:port (/healthz /readyz /metrics /status); empty: off"`
	// TokenFile holds a bearer token required for everything beyond
	// /healthz and /readyz; empty: none.
	TokenFile string `yaml:"token_file" json:"token_file" help:"file holding a bearer token required beyond /healthz and /readyz; empty: none"`
	// TLSCertFile and TLSKeyFile (PEM) serve the admin server over TLS.
	TLSCertFile string `yaml:"tls_cert_file" json:"tls_cert_file" help:"admin server TLS certificate (PEM); with tls_key_file"`
	TLSKeyFile  string `yaml:"tls_key_file" json:"tls_key_file" help:"admin server TLS key (PEM); with tls_cert_file"`
	// IdleTimeout closes idle keep-alive connections.
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout" help:"admin server: close keep-alive connections idle this long"`
	// Pprof serves /debug/pprof/ (behind the token when one is set).
	Pprof bool `yaml:"pprof" json:"pprof" help:"serve /debug/pprof/ on the admin server (off by default)"`
	// LogLevelControl allows changing the log level at run time (PUT
	// /loglevel); on loopback it is always allowed.
	LogLevelControl bool `yaml:"log_level_control" json:"log_level_control" help:"allow changing the log level through the admin server beyond loopback (needs token_file)"`
}

// Log configures logging.
type Log struct {
	// Format: text or json.
	Format string `yaml:"format" json:"format" help:"log format"`
	// Level: debug, info, warn or error.
	Level string `yaml:"level" json:"level" help:"log level"`
}

// Default returns the defaults: those of manager.NewConfig for the
// consumer, the stdout sink (the exec and http sinks in mode message, with
// the Default* batch limits and request bound), 5 attempts from 200ms backing off to 30s,
// on_failure stop, admin on 127.0.0.1:9779, text logs at info, a 30s
// shutdown, Kafka client id "zkgroup" speaking protocol version 2.1.0
// without TLS or SASL, no ZooKeeper credentials. Pure; does not block.
func Default() *Config {
	m := manager.NewConfig()
	return &Config{
		SessionTimeout:          Duration(m.SessionTimeout),
		RestartGrace:            RestartGraceSessionTimeout,
		KafkaUnreachableTimeout: Duration(m.KafkaUnreachableTimeout),
		Strategy:                assign.DefaultName,
		OffsetStorage:           string(m.OffsetStorage),
		Partition:               Partition{m.Partition},
		Sink: Sink{
			Type: SinkStdout,
			Exec: Exec{Timeout: Duration(30 * time.Second), Mode: ModeMessage,
				Batch: ExecBatch{MaxMessages: DefaultExecBatchMessages, MaxBytes: DefaultExecBatchBytes, Linger: Duration(DefaultExecBatchLinger)}},
			HTTP: HTTP{Timeout: Duration(10 * time.Second), Mode: ModeMessage, MaxInFlight: DefaultHTTPMaxInFlight,
				Batch: HTTPBatch{MaxMessages: DefaultHTTPBatchMessages, MaxBytes: DefaultHTTPBatchBytes, Linger: Duration(DefaultHTTPBatchLinger)}},
			Retry:     Retry{MaxAttempts: 5, InitialBackoff: Duration(200 * time.Millisecond), MaxBackoff: Duration(30 * time.Second)},
			OnFailure: OnFailureStop,
		},
		Admin:           Admin{Listen: DefaultAdminListen, IdleTimeout: Duration(60 * time.Second)},
		Kafka:           Kafka{ClientID: DefaultClientID, Version: DefaultKafkaVersion, IsolationLevel: IsolationReadUncommitted},
		Log:             Log{Format: LogText, Level: "info"},
		ShutdownTimeout: Duration(30 * time.Second),
	}
}
