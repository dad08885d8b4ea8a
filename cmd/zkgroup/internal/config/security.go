package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/saramaconf"
	"github.com/zkgroup/zkgroup/kafkasasl"
)

// Defaults of the Kafka clients.
const (
	// DefaultClientID is the Kafka client id of every client the daemon
	// and the operator commands open.
	DefaultClientID = saramaconf.ClientID
	// DefaultKafkaVersion is the protocol version spoken: 2.1.0 is the
	// oldest that Kafka 4 still serves (KIP-896) and is served by every
	// broker since 2.1, ZooKeeper mode or KRaft.
	DefaultKafkaVersion = "2.1.0"
	// IsolationReadUncommitted and IsolationReadCommitted are the values
	// of kafka.isolation_level, named as Kafka's isolation.level.
	IsolationReadUncommitted = "read_uncommitted"
	IsolationReadCommitted   = "read_committed"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Kafka configures the Kafka clients.
type Kafka struct {
	// ClientID is sent with every request (quotas, broker logs).
	ClientID string `yaml:"client_id" json:"client_id" help:"Kafka client id of every client"`
	// Version is the Kafka protocol version to speak, e.g. "2.1.0".
	Version string `yaml:"version" json:"version" help:"Kafka protocol version to speak (2.1.0 works with 2.1 to 4.x)"`
	// IsolationLevel is Kafka's isolation.level: read_uncommitted reads
	// every record up to the high watermark; read_committed reads up to
	// the last stable offset and drops aborted transactions' records.
	IsolationLevel string `yaml:"isolation_level" json:"isolation_level" help:"Kafka's isolation.level: read_uncommitted reads every record up to the high watermark, read_committed only committed transactions' records up to the last stable offset"`
	// Rack is Kafka's client.rack: the member fetches each partition from
	// the replica in this rack its leader names (brokers with a
	// rack-aware replica.selector.class; version 2.3.0 or later).
	Rack string `yaml:"rack" json:"rack" help:"Kafka's client.rack: fetch each partition from the replica in this rack its leader names (brokers with a rack-aware replica.selector.class; kafka.version 2.3.0 or later); empty: from leaders"`
	// TLS secures the connections to the brokers (SSL and SASL_SSL
	// listeners).
	TLS TLS `yaml:"tls" json:"tls" help:"TLS to the brokers (SSL and SASL_SSL listeners)"`
	// SASL authenticates to the brokers (SASL_PLAINTEXT and SASL_SSL
	// listeners).
	SASL SASL `yaml:"sasl" json:"sasl" help:"SASL authentication to the brokers (SASL_PLAINTEXT and SASL_SSL listeners)"`
}

// TLS configures a TLS client: Kafka's SSL listeners or ZooKeeper's
// secure client port. The server's certificate is verified unless
// InsecureSkipVerify.
type TLS struct {
	// Enable turns TLS on.
	Enable bool `yaml:"enable" json:"enable" help:"connect over TLS"`
	// CAFile is a PEM file of the CAs that sign the servers' certificates;
	// empty: the system's roots.
	CAFile string `yaml:"ca_file" json:"ca_file" help:"TLS: PEM file of trusted CAs (empty: the system's)"`
	// CertFile and KeyFile are the client's certificate and key (PEM),
	// for servers that require client authentication (mutual TLS).
	CertFile string `yaml:"cert_file" json:"cert_file" help:"TLS: PEM client certificate, for mutual TLS"`
	KeyFile  string `yaml:"key_file" json:"key_file" help:"TLS: PEM client key, with cert_file"`
	// ServerName is the name to verify in the servers' certificates;
	// empty: the host dialled.
	ServerName string `yaml:"server_name" json:"server_name" help:"TLS: name to verify in the server's certificate (empty: the host dialled)"`
	// InsecureSkipVerify accepts any server certificate. For tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify" help:"TLS: accept any server certificate (tests only)"`
}

// SASL configures SASL authentication to Kafka. The password is never
// written in the configuration: it is read from PasswordFile or from the
// environment variable named by PasswordEnv.
type SASL struct {
	// Mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: no SASL.
	Mechanism string `yaml:"mechanism" json:"mechanism" help:"SASL mechanism (empty: no SASL)"`
	// Username to authenticate as.
	Username string `yaml:"username" json:"username" help:"SASL user name"`
	// PasswordFile holds the password (one line; a final newline is
	// dropped).
	PasswordFile string `yaml:"password_file" json:"password_file" help:"file holding the SASL password"`
	// PasswordEnv names an environment variable holding the password.
	PasswordEnv string `yaml:"password_env" json:"password_env" help:"environment variable holding the SASL password"`
}

// ZooKeeperAuth holds ZooKeeper digest credentials (scheme "digest",
// "user:password"). The password comes from PasswordFile or the
// environment variable PasswordEnv, never from the configuration itself.
type ZooKeeperAuth struct {
	// Username of the digest credentials; empty: none.
	Username string `yaml:"username" json:"username" help:"ZooKeeper digest user (empty: no credentials)"`
	// PasswordFile holds the password.
	PasswordFile string `yaml:"password_file" json:"password_file" help:"file holding the ZooKeeper digest password"`
	// PasswordEnv names an environment variable holding the password.
	PasswordEnv string `yaml:"password_env" json:"password_env" help:"environment variable holding the ZooKeeper digest password"`
}

// Secret is a password or key read at run time. Its String, GoString,
// JSON and text forms are redacted, so that it cannot reach a log line,
// an error text or --json output by accident; Reveal returns it. A plain
// value, safe for concurrent reads.
type Secret struct{ s string }

// Redacted is what a Secret prints as.
const Redacted = "<redacted>"

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{s: s} }

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return s.s }

// Empty reports whether the secret is "".
func (s Secret) Empty() bool { return s.s == "" }

// String returns Redacted (or "" for an empty secret).
func (s Secret) String() string {
	if s.s == "" {
		return ""
	}
	return Redacted
}

// GoString returns Redacted too, for %#v.
func (s Secret) GoString() string { return s.String() }

// MarshalText returns Redacted (for JSON, YAML and slog).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// resolved is what Resolve read: passwords and TLS configs.
type resolved struct {
	kafkaPassword Secret
	zkPassword    Secret
	kafkaTLS      *tls.Config
	zooKeeperTLS  *tls.Config
}

func (c *Config) checkKafka() error {
	k := c.Kafka
	if err := c.firstBad(
		rule{"kafka.client_id", strings.TrimSpace(k.ClientID) == "", "must not be empty"},
		rule{"kafka.client_id", !printable(k.ClientID), "must be printable text of at most 255 bytes"},
	); err != nil {
		return err
	}
	v, err := sarama.ParseKafkaVersion(k.Version)
	if err != nil {
		return c.bad("kafka.version", `not a Kafka version such as "2.1.0"`, nil)
	}
	if !v.IsAtLeast(sarama.V0_11_0_0) {
		return c.bad("kafka.version", "must be at least 0.11.0 (record headers)", nil)
	}
	if err := c.checkOneOf("kafka.isolation_level"); err != nil {
		return err
	}
	if !printable(k.Rack) {
		return c.bad("kafka.rack", "must be printable text of at most 255 bytes", nil)
	}
	if err := c.checkTLS("kafka.tls", k.TLS); err != nil {
		return err
	}
	s := k.SASL
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.PasswordFile != "" || s.PasswordEnv != "" {
			return c.bad("kafka.sasl.mechanism", "required with kafka.sasl.username or a password ("+oneOf(enumValues("kafka.sasl.mechanism"))+")", nil)
		}
		return nil
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		return c.bad("kafka.sasl.mechanism", "must be "+oneOf(enumValues("kafka.sasl.mechanism")), nil)
	}
	if err := c.firstBad(
		rule{"kafka.sasl.username", s.Username == "", "required with kafka.sasl.mechanism"},
		rule{"kafka.sasl.username", strings.ContainsFunc(s.Username, unicode.IsControl), "must not hold control characters (a NUL breaks SASL PLAIN's framing)"},
	); err != nil {
		return err
	}
	return c.checkPasswordSource("kafka.sasl", s.PasswordFile, s.PasswordEnv)
}

func (c *Config) checkZooKeeperSecurity() error {
	a := c.ZooKeeperAuth
	if err := c.firstBad(
		rule{"zookeeper_auth.username", a.Username == "" && (a.PasswordFile != "" || a.PasswordEnv != ""), "required with a ZooKeeper password"},
		rule{"zookeeper_auth.username", strings.ContainsFunc(a.Username, unicode.IsControl), "must not hold control characters"},
		rule{"zookeeper_auth.username", strings.Contains(a.Username, ":"), "must not hold ':' (digest credentials are user:password)"},
	); err != nil {
		return err
	}
	if a.Username != "" {
		if err := c.checkPasswordSource("zookeeper_auth", a.PasswordFile, a.PasswordEnv); err != nil {
			return err
		}
	}
	return c.checkTLS("zookeeper_tls", c.ZooKeeperTLS)
}

// checkPasswordSource wants exactly one of <prefix>.password_file and
// <prefix>.password_env.
func (c *Config) checkPasswordSource(prefix, file, env string) error {
	return c.firstBad(
		rule{prefix + ".password_file", file == "" && env == "", "a password is required: set " + prefix + ".password_file or " + prefix + ".password_env (a password is never written in the configuration)"},
		rule{prefix + ".password_env", file != "" && env != "", "set only one of " + prefix + ".password_file and " + prefix + ".password_env"},
		rule{prefix + ".password_env", env != "" && (strings.ContainsAny(env, "= \t\n") || strings.HasPrefix(env, "$")), "must be the name of an environment variable (without $)"},
	)
}

// printable reports whether s is Kafka-safe text: no control character,
// at most 255 bytes.
func printable(s string) bool {
	return !strings.ContainsFunc(s, unicode.IsControl) && len(s) <= 255
}

func (c *Config) checkTLS(prefix string, t TLS) error {
	if !t.Enable {
		for _, f := range []struct{ name, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"server_name", t.ServerName}} {
			if f.v != "" {
				return c.bad(prefix+"."+f.name, "is set but "+prefix+".enable is false", nil)
			}
		}
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return c.bad(prefix+".key_file", "cert_file and key_file go together (mutual TLS)", nil)
	}
	return nil
}

// Resolve reads what the configuration refers to: the passwords (from
// their files or environment variables, through lookup) and the TLS files
// (CA, client certificate and key). Errors are *FieldErrors naming the
// field and the file or variable, never a password. Call it after
// Validate; Manager, Sarama and ZooKeeperCredentials use what it read. It
// blocks on reading the files.
func (c *Config) Resolve(lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	var r resolved
	var err error
	if c.Kafka.SASL.Mechanism != "" {
		if r.kafkaPassword, err = c.readPassword("kafka.sasl", c.Kafka.SASL.PasswordFile, c.Kafka.SASL.PasswordEnv, lookup); err != nil {
			return err
		}
	}
	if c.ZooKeeperAuth.Username != "" {
		if r.zkPassword, err = c.readPassword("zookeeper_auth", c.ZooKeeperAuth.PasswordFile, c.ZooKeeperAuth.PasswordEnv, lookup); err != nil {
			return err
		}
	}
	if r.kafkaTLS, err = c.buildTLS("kafka.tls", c.Kafka.TLS); err != nil {
		return err
	}
	if r.zooKeeperTLS, err = c.buildTLS("zookeeper_tls", c.ZooKeeperTLS); err != nil {
		return err
	}
	c.secrets = &r
	return nil
}

// resolved reports whether Resolve ran.
func (c *Config) resolved() bool { return c.secrets != nil }

// PasswordEnv returns the environment variables that hold passwords, so
// that they are kept from the exec sink's children and from the warning
// about unknown ZKGROUP_ variables. Pure.
func (c *Config) PasswordEnv() []string {
	var out []string
	for _, v := range []string{c.Kafka.SASL.PasswordEnv, c.ZooKeeperAuth.PasswordEnv} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// maxSecretFile bounds a password file: a password is a line.
const maxSecretFile = 64 << 10

func (c *Config) readPassword(prefix, file, env string, lookup func(string) (string, bool)) (Secret, error) {
	if file != "" {
		field := prefix + ".password_file"
		st, err := os.Stat(file)
		if err != nil {
			return Secret{}, c.bad(field, "cannot read the password file", err)
		}
		if st.Size() > maxSecretFile {
			return Secret{}, c.bad(field, fmt.Sprintf("the password file is %d bytes; a password is one line", st.Size()), nil)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return Secret{}, c.bad(field, "cannot read the password file", err)
		}
		pw := strings.TrimRight(string(b), "\r\n")
		if pw == "" {
			return Secret{}, c.bad(field, "the password file is empty", nil)
		}
		if strings.ContainsAny(pw, "\r\n") {
			return Secret{}, c.bad(field, "the password file holds more than one line", nil)
		}
		return NewSecret(pw), nil
	}
	field := prefix + ".password_env"
	v, ok := lookup(env)
	if !ok {
		return Secret{}, c.bad(field, fmt.Sprintf("environment variable %s is not set", env), nil)
	}
	if v == "" {
		return Secret{}, c.bad(field, fmt.Sprintf("environment variable %s is empty", env), nil)
	}
	return NewSecret(v), nil
}

// buildTLS reads a TLS section's files; nil when TLS is off.
func (c *Config) buildTLS(prefix string, t TLS) (*tls.Config, error) {
	if !t.Enable {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // an explicit, documented test switch
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, c.bad(prefix+".ca_file", "cannot read the CA file", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, c.bad(prefix+".ca_file", "holds no PEM certificate", nil)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		kp, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, c.bad(prefix+".cert_file", "cannot load the client certificate and key", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}

// Sarama returns the base sarama config of every Kafka client: client id,
// version, TLS and SASL as configured (Resolve must have run when TLS or
// SASL is on). Callers add their own settings to the copy they get. It
// fails when Resolve has not run but is needed. Does not block.
func (c *Config) Sarama() (*sarama.Config, error) {
	s := saramaconf.New(c.Kafka.ClientID)
	v, err := sarama.ParseKafkaVersion(c.Kafka.Version)
	if err != nil {
		return nil, c.bad("kafka.version", `not a Kafka version such as "2.1.0"`, nil)
	}
	s.Version = v
	if c.Kafka.IsolationLevel == IsolationReadCommitted {
		s.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	s.RackID = c.Kafka.Rack
	needs := c.Kafka.TLS.Enable || c.Kafka.SASL.Mechanism != ""
	if needs && !c.resolved() {
		return nil, fmt.Errorf("%w: kafka: TLS or SASL configured but Resolve has not run", ErrConfig)
	}
	if c.resolved() && c.secrets.kafkaTLS != nil {
		s.Net.TLS.Enable = true
		s.Net.TLS.Config = c.secrets.kafkaTLS.Clone()
	}
	if m := c.Kafka.SASL.Mechanism; m != "" {
		s.Net.SASL.Enable = true
		s.Net.SASL.Handshake = true
		s.Net.SASL.User = c.Kafka.SASL.Username
		s.Net.SASL.Password = c.secrets.kafkaPassword.Reveal()
		switch m {
		case SASLPlain:
			s.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		case SASLScramSHA256:
			s.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			s.Net.SASL.SCRAMClientGeneratorFunc = kafkasasl.NewSCRAMClient(kafkasasl.SHA256)
		case SASLScramSHA512:
			s.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			s.Net.SASL.SCRAMClientGeneratorFunc = kafkasasl.NewSCRAMClient(kafkasasl.SHA512)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: kafka: %w", ErrConfig, err)
	}
	return s, nil
}

// ZooKeeperCredentials returns the digest credentials "user:password"
// (ok false when none are configured). Resolve must have run.
func (c *Config) ZooKeeperCredentials() (user string, password Secret, ok bool) {
	if c.ZooKeeperAuth.Username == "" || !c.resolved() || c.secrets.zkPassword.Empty() {
		return "", Secret{}, false
	}
	return c.ZooKeeperAuth.Username, c.secrets.zkPassword, true
}

// ZooKeeperTLSConfig returns the TLS config for ZooKeeper (nil: plain
// TCP). Resolve must have run.
func (c *Config) ZooKeeperTLSConfig() *tls.Config {
	if !c.resolved() || c.secrets.zooKeeperTLS == nil {
		return nil
	}
	return c.secrets.zooKeeperTLS.Clone()
}

// ValidateConnection checks only what the operator commands need: the
// group, the ZooKeeper connect string, the brokers, and the Kafka and
// ZooKeeper security settings. Errors are *FieldErrors. Pure.
func (c *Config) ValidateConnection() error {
	for _, check := range []func() error{c.checkGroup, c.checkZooKeeper, c.checkBrokers, c.checkKafka, c.checkZooKeeperSecurity} {
		if err := check(); err != nil {
			return err
		}
	}
	return c.checkOneOf("offset_storage")
}

// SetOrigin records where a field's value came from, for a value the
// caller set itself (an operator command's own flag). Unknown paths are
// ignored. Not safe for concurrent use.
func (c *Config) SetOrigin(path, origin string) {
	if _, ok := fieldByPath(path); !ok {
		return
	}
	if c.origins == nil {
		c.origins = map[string]string{}
	}
	c.origins[path] = origin
}
