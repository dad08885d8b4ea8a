package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// Validate checks every field and returns the first problem as a
// *FieldError naming the field, its value and where it was set. It also
// runs manager.Config.Validate on the consumer config built from c, so
// that nothing Join would refuse passes. Pure: no I/O, does not block.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.checkGroup, c.checkZooKeeper, c.checkSubscription, c.checkConsumer,
		c.checkPartition, c.checkSink, c.checkAdmin, c.checkLog, c.checkShutdown,
		c.checkKafka, c.checkZooKeeperSecurity,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	if _, _, err := c.Manager(nil); err != nil {
		return &FieldError{Field: "(consumer)", Reason: "refused by the consumer library", Err: err}
	}
	return nil
}

// rule is one check of a field: when bad holds, the field at path is
// refused for reason.
type rule struct {
	path   string
	bad    bool
	reason string
}

// firstBad returns the FieldError of the first rule whose bad holds, in
// order; nil when none does.
func (c *Config) firstBad(rules ...rule) error {
	for _, r := range rules {
		if r.bad {
			return c.bad(r.path, r.reason, nil)
		}
	}
	return nil
}

// bad builds a FieldError for the field at path with its current value.
func (c *Config) bad(path, reason string, err error) error {
	fe := &FieldError{Field: path, Origin: c.Origin(path), Reason: reason, Err: err}
	if f, ok := fieldByPath(path); ok {
		fe.Value = f.text(c)
	}
	return fe
}

func (c *Config) checkGroup() error {
	if c.Group == "" {
		return c.bad("group", "required (set it in the file, ZKGROUP_GROUP or --group)", nil)
	}
	if err := zkdata.ValidateNodeName("group", c.Group); err != nil {
		return c.bad("group", "not a valid ZooKeeper node name", err)
	}
	return nil
}

func (c *Config) checkZooKeeper() error {
	if strings.TrimSpace(c.ZooKeeper) == "" {
		return c.bad("zookeeper", "required (host:2181/chroot; ZKGROUP_ZOOKEEPER or --zookeeper)", nil)
	}
	if _, _, err := zkconn.ParseConnect(c.ZooKeeper); err != nil {
		return c.bad("zookeeper", "not a ZooKeeper connect string", err)
	}
	return nil
}

func (c *Config) checkSubscription() error {
	if strings.TrimSpace(c.Subscription) == "" {
		return c.bad("subscription", `required ("static:a,b" or "whitelist:regex")`, nil)
	}
	if _, err := subscription.Parse(c.Subscription); err != nil {
		return c.bad("subscription", "not a subscription", err)
	}
	return nil
}

func (c *Config) checkConsumer() error {
	if c.InstanceID != "" {
		if err := zkdata.ValidateNodeName("instance_id", c.InstanceID); err != nil {
			return c.bad("instance_id", "not a valid ZooKeeper node name", err)
		}
	}
	session := c.SessionTimeout.D()
	if err := c.firstBad(
		rule{"session_timeout", session < manager.MinSessionTimeout, "must be at least " + manager.MinSessionTimeout.String()},
		rule{"session_timeout", session > manager.MaxSessionTimeout, "must be at most " + manager.MaxSessionTimeout.String() + " (ZooKeeper caps sessions at 20 x tickTime, 40s by default)"},
	); err != nil {
		return err
	}
	if err := c.checkRestartGrace(); err != nil {
		return err
	}
	unreachable, reply := c.KafkaUnreachableTimeout.D(), c.ZooKeeperMaxReply
	if err := c.firstBad(
		rule{"kafka_unreachable_timeout", unreachable != 0 && (unreachable < manager.MinKafkaUnreachableTimeout || unreachable > manager.MaxKafkaUnreachableTimeout),
			"must be 0 (45s, or session_timeout if longer) or from " + manager.MinKafkaUnreachableTimeout.String() + " to " + manager.MaxKafkaUnreachableTimeout.String()},
		rule{"zookeeper_max_reply", reply != 0 && (reply < manager.MinZooKeeperMaxReply || reply > manager.MaxZooKeeperMaxReply),
			fmt.Sprintf("must be 0 (%d) or from %d to %d", manager.DefaultZooKeeperMaxReply, manager.MinZooKeeperMaxReply, manager.MaxZooKeeperMaxReply)},
	); err != nil {
		return err
	}
	if _, err := assign.ByName(c.Strategy); err != nil {
		return c.bad("strategy", "unknown strategy", err)
	}
	if err := c.checkOneOf("offset_storage"); err != nil {
		return err
	}
	return c.checkBrokers()
}

func (c *Config) checkBrokers() error {
	for i, b := range c.Brokers {
		if err := checkHostPort(b, false); err != nil {
			return c.bad("brokers", fmt.Sprintf("entry %d (%q) is not host:port", i, b), err)
		}
	}
	return nil
}

func (c *Config) checkPartition() error {
	p := c.Partition
	if err := c.firstBad(
		rule{"partition.max_unacked", p.MaxUnacked < 1, "must be at least 1"},
		rule{"partition.commit_interval", p.CommitInterval <= 0, "must be positive"},
		rule{"partition.drain_timeout", p.DrainTimeout < 0, "must not be negative"},
	); err != nil {
		return err
	}
	return c.checkOneOf("partition.initial")
}

func (c *Config) checkSink() error {
	s := c.Sink
	if err := c.checkOneOf("sink.type"); err != nil {
		return err
	}
	switch s.Type {
	case SinkStdout:
	case SinkExec:
		if err := c.firstBad(
			rule{"sink.exec.command", len(s.Exec.Command) == 0 || s.Exec.Command[0] == "", "required with sink.type exec"},
			rule{"sink.exec.timeout", s.Exec.Timeout <= 0, "must be positive"},
		); err != nil {
			return err
		}
	case SinkHTTP:
		u, err := url.Parse(s.HTTP.URL)
		if s.HTTP.URL == "" {
			return c.bad("sink.http.url", "required with sink.type http", nil)
		}
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// url.Parse's error quotes the URL whole, secrets and all.
			return c.bad("sink.http.url", "must be an absolute http:// or https:// URL", nil)
		}
		if s.HTTP.Timeout <= 0 {
			return c.bad("sink.http.timeout", "must be positive", nil)
		}
		if p := sink.HeaderProblem(s.HTTP.Headers); p != "" {
			return c.bad("sink.http.headers", p, nil)
		}
	}
	if err := c.checkSinkModes(); err != nil {
		return err
	}
	r := s.Retry
	if err := c.firstBad(
		rule{"sink.retry.max_attempts", r.MaxAttempts < 1, "must be at least 1 (1: no retry)"},
		rule{"sink.retry.initial_backoff", r.InitialBackoff <= 0, "must be positive"},
		rule{"sink.retry.max_backoff", r.MaxBackoff < r.InitialBackoff, "must be at least sink.retry.initial_backoff"},
	); err != nil {
		return err
	}
	if err := c.checkOneOf("sink.on_failure"); err != nil {
		return err
	}
	switch s.OnFailure {
	case OnFailureStop, OnFailureSkip:
	case OnFailureDeadLetter:
		if s.DeadLetterTopic == "" {
			return c.bad("sink.dead_letter_topic", "required with sink.on_failure dead-letter", nil)
		}
		if err := subscription.ValidateTopic(s.DeadLetterTopic); err != nil {
			return c.bad("sink.dead_letter_topic", "not a topic name", err)
		}
		if sub, err := subscription.Parse(c.Subscription); err == nil && sub.Match(s.DeadLetterTopic) {
			return c.bad("sink.dead_letter_topic", "is matched by the subscription: failed messages would be consumed again", nil)
		}
	}
	return nil
}

// checkSinkModes checks the modes, batch limits and request bound of the
// exec and http sinks, whichever sink is used (so that a mistake shows
// before the sink type is switched).
func (c *Config) checkSinkModes() error {
	e, h := c.Sink.Exec, c.Sink.HTTP
	for _, path := range []string{"sink.exec.mode", "sink.http.mode"} {
		if err := c.checkOneOf(path); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		prefix          string
		messages, bytes int
		linger          Duration
	}{
		{"sink.exec.batch.", e.Batch.MaxMessages, e.Batch.MaxBytes, e.Batch.Linger},
		{"sink.http.batch.", h.Batch.MaxMessages, h.Batch.MaxBytes, h.Batch.Linger},
	} {
		if err := c.firstBad(
			rule{b.prefix + "max_messages", b.messages < 1, "must be at least 1"},
			rule{b.prefix + "max_bytes", b.bytes < 1, "must be at least 1"},
			rule{b.prefix + "linger", b.linger < 0, "must not be negative (0: do not wait)"},
		); err != nil {
			return err
		}
	}
	return c.firstBad(rule{"sink.http.max_in_flight", h.MaxInFlight < 1, "must be at least 1"})
}

func (c *Config) checkAdmin() error {
	if c.Admin.Listen == "" {
		return nil
	}
	if err := checkHostPort(c.Admin.Listen, true); err != nil {
		return c.bad("admin.listen", "must be host:port (or empty to disable)", err)
	}
	a := c.Admin
	return c.firstBad(
		rule{"admin.tls_cert_file", (a.TLSCertFile == "") != (a.TLSKeyFile == ""), "needs admin.tls_key_file, and the other way round"},
		rule{"admin.idle_timeout", a.IdleTimeout < 0, "must not be negative"},
		rule{"admin.log_level_control", a.LogLevelControl && a.TokenFile == "", "needs admin.token_file (beyond loopback the level may change only behind a token)"},
	)
}

// checkHostPort checks "host:port" with a port from 1 to 65535 (0 too with
// anyPort: "pick a free one"); the host may be empty only with anyPort
// (listen on every address).
func checkHostPort(s string, listen bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" && !listen {
		return errors.New("no host")
	}
	n, err := strconv.Atoi(port)
	lowest := 1
	if listen {
		lowest = 0
	}
	if err != nil || n < lowest || n > 65535 {
		return fmt.Errorf("port %q is not a number from %d to 65535", port, lowest)
	}
	return nil
}

func (c *Config) checkLog() error {
	if err := c.checkOneOf("log.format"); err != nil {
		return err
	}
	if _, err := ParseLevel(c.Log.Level); err != nil {
		return c.bad("log.level", "must be "+oneOf(enumValues("log.level")), nil)
	}
	return nil
}

func (c *Config) checkShutdown() error {
	start := c.ZooKeeperStartTimeout.D()
	return c.firstBad(
		rule{"shutdown_timeout", c.ShutdownTimeout <= 0, "must be positive"},
		rule{"zookeeper_start_timeout", start < 0, "must not be negative (0: wait until ZooKeeper answers)"},
		rule{"zookeeper_start_timeout", start > 0 && start < time.Second, "must be 0 (no bound) or at least 1s"},
		rule{"partition.drain_timeout", c.Partition.DrainTimeout >= c.ShutdownTimeout.D(),
			fmt.Sprintf("must be below shutdown_timeout (%v) so that a shutdown can finish", c.ShutdownTimeout)},
	)
}
