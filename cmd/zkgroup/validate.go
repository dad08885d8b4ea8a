package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/subscription"
)

// cmdValidate loads and validates a configuration like run does, reading
// the password files and variables and the TLS files it names, and warns
// of ZKGROUP_* variables that set no field as run does. By default it
// connects nowhere, and says so. With --connect it then meets what run
// meets before it joins (run's preflight): ZooKeeper reachable with the
// configured credentials and TLS, the chroot, the group's nodes writable,
// the brokers (registered in ZooKeeper, or brokers: needed, as with Kafka
// 4 / KRaft), and it warns of subscribed topics Kafka does not know.
// Exit 0 when valid (and reachable), 2 for a bad configuration (with
// --connect also: no broker registered and none configured), 3 when a
// server refused the credentials or a certificate (as run), 1 when
// ZooKeeper or Kafka did not answer.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	connect := fs.Bool("connect", false, "also connect as run does: ZooKeeper (credentials, TLS, chroot, the group's nodes),\nthe brokers and the subscribed topics (default: offline checks only)")
	load := configFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, path, err := load()
	if err != nil {
		if *asJSON {
			_ = printJSON(stdout, map[string]any{"valid": false, "error": err.Error()})
		}
		fmt.Fprintf(stderr, "zkgroup validate: %v\n", err)
		return exitUsage
	}
	warnings := []string{}
	if unknown := unknownEnv(cfg); len(unknown) > 0 {
		warnings = append(warnings, unknownEnvWarning+": "+strings.Join(unknown, ", "))
	}
	var found *preflightResult
	if *connect {
		found = new(preflightResult)
		if code, err := validateConnect(cfg, found, stderr); err != nil {
			if *asJSON {
				_ = printJSON(stdout, map[string]any{"valid": code != exitUsage, "checked": "connect", "error": err.Error(),
					"exit_status": code, "warnings": warnings})
			}
			printWarnings(stderr, warnings)
			fmt.Fprintf(stderr, "zkgroup validate: %v\n", err)
			return code
		}
		warnings = append(warnings, topicWarnings(cfg, found.Topics)...)
	}
	printWarnings(stderr, warnings)
	if *asJSON {
		out := map[string]any{"valid": true, "checked": "offline", "config": redacted(cfg), "warnings": warnings}
		if found != nil {
			out["checked"], out["connection"] = "connect", found
		}
		_ = printJSON(stdout, out)
		return exitOK
	}
	if found == nil {
		fmt.Fprintf(stdout, "%s: configuration OK (offline checks only; --connect also checks ZooKeeper, the brokers and the topics)\n", nameOr(path, "(no file)"))
	} else {
		fmt.Fprintf(stdout, "%s: configuration OK; ZooKeeper and Kafka accept it as run needs\n", nameOr(path, "(no file)"))
	}
	fmt.Fprintf(stdout, "  group %s, subscription %s, zookeeper %s\n", cfg.Group, cfg.Subscription, cfg.ZooKeeper)
	fmt.Fprintf(stdout, "  sink %s (on_failure %s, %d attempts), offsets in %s, admin %s\n",
		sinkSummary(cfg.Sink), cfg.Sink.OnFailure, cfg.Sink.Retry.MaxAttempts, cfg.OffsetStorage, nameOr(cfg.Admin.Listen, "off"))
	fmt.Fprintf(stdout, "  kafka: %s, client id %s, protocol %s; zookeeper: %s\n",
		kafkaSecurity(cfg), cfg.Kafka.ClientID, cfg.Kafka.Version, zooKeeperSecurity(cfg))
	if found != nil {
		fmt.Fprint(stdout, connectSummary(cfg, found))
	}
	return exitOK
}

// validateConnect runs run's preflight for validate --connect, filling
// found, and returns the exit status with the error: 1 when ZooKeeper
// refuses connections (at once) or does not answer within the session
// timeout, or Kafka does not answer; 3 for a refusal; 2 when no broker is
// registered in ZooKeeper and none is configured, or for another
// configuration error. While the ZooKeeper session takes longer than
// waitNoteAfter it says on stderr what it waits for.
func validateConnect(cfg *config.Config, found *preflightResult, stderr io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*cfg.SessionTimeout.D())
	defer cancel()
	if err := ops.ProbeRefused(ctx, cfg.ZooKeeper); err != nil {
		return exitFor(err), err
	}
	note := time.AfterFunc(waitNoteAfter, func() {
		fmt.Fprintf(stderr, "zkgroup validate: waiting up to %v (session_timeout) for a ZooKeeper session with %s\n", cfg.SessionTimeout.D(), cfg.ZooKeeper)
	})
	err := preflight(ctx, cfg, slog.New(slog.DiscardHandler), found)
	note.Stop()
	switch {
	case err == nil:
		return exitOK, nil
	case errors.Is(err, errRefused):
		return exitRefused, err
	case errors.Is(err, zkconn.ErrNoBroker) && len(cfg.Brokers) == 0:
		return exitUsage, err
	}
	return exitFor(err), err
}

// topicWarnings says, as run would, when the subscription matches none of
// the topics Kafka lists, and names the topics of a static subscription
// Kafka does not know. Pure.
func topicWarnings(cfg *config.Config, topics []string) []string {
	sub, err := subscription.Parse(cfg.Subscription)
	if err != nil { // Validate parsed it already
		return nil
	}
	if len(sub.Filter(topics)) == 0 {
		return []string{fmt.Sprintf("the subscription matches no topic: nothing to consume until a matching topic is created (subscription %s)", cfg.Subscription)}
	}
	var missing []string
	for _, t := range sub.StaticTopics() {
		if !slices.Contains(topics, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return []string{fmt.Sprintf("Kafka does not know the subscribed topics %s: nothing to consume from them until they are created", strings.Join(missing, ", "))}
	}
	return nil
}

// connectSummary says what validate --connect found.
func connectSummary(cfg *config.Config, f *preflightResult) string {
	var b strings.Builder
	chroot := "no chroot"
	switch {
	case f.Chroot != "" && f.ChrootExists:
		chroot = "chroot " + f.Chroot + " exists"
	case f.Chroot != "":
		chroot = "chroot " + f.Chroot + " does not exist yet (a member creates it)"
	}
	fmt.Fprintf(&b, "  connected: zookeeper session, %s, the group's nodes writable\n", chroot)
	from := "from brokers:"
	if f.Registered {
		from = "registered in ZooKeeper"
	}
	fmt.Fprintf(&b, "  connected: kafka %s (%s)\n", strings.Join(f.Brokers, ", "), from)
	matched := []string{}
	if sub, err := subscription.Parse(cfg.Subscription); err == nil {
		matched = sub.Filter(f.Topics)
	}
	shown := matched
	if len(shown) > 10 {
		shown = shown[:10]
	}
	list := strings.Join(shown, ", ")
	if len(matched) > len(shown) {
		list += fmt.Sprintf(", ... (%d in all)", len(matched))
	}
	if list == "" {
		list = "none"
	}
	fmt.Fprintf(&b, "  topics of the subscription known to Kafka: %s\n", list)
	return b.String()
}

// printWarnings writes each warning on its own line of stderr.
func printWarnings(stderr io.Writer, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "zkgroup validate: warning: %s\n", w)
	}
}

// sinkSummary names the sink and, for exec and http, how it delivers,
// for validate.
func sinkSummary(s config.Sink) string {
	how := func(mode string, messages, bytes int, linger config.Duration) string {
		if mode != config.ModeBatch {
			return "per message"
		}
		return fmt.Sprintf("in batches of up to %d messages or %d bytes, linger %v", messages, bytes, linger)
	}
	switch s.Type {
	case config.SinkExec:
		b := s.Exec.Batch
		return "exec " + how(s.Exec.Mode, b.MaxMessages, b.MaxBytes, b.Linger)
	case config.SinkHTTP:
		b := s.HTTP.Batch
		return fmt.Sprintf("http %s, %d requests in flight", how(s.HTTP.Mode, b.MaxMessages, b.MaxBytes, b.Linger), s.HTTP.MaxInFlight)
	}
	return s.Type
}

// kafkaSecurity says how the Kafka clients authenticate, for validate.
func kafkaSecurity(cfg *config.Config) string {
	proto := "PLAINTEXT"
	switch {
	case cfg.Kafka.TLS.Enable && cfg.Kafka.SASL.Mechanism != "":
		proto = "SASL_SSL"
	case cfg.Kafka.TLS.Enable:
		proto = "SSL"
	case cfg.Kafka.SASL.Mechanism != "":
		proto = "SASL_PLAINTEXT"
	}
	if cfg.Kafka.SASL.Mechanism != "" {
		proto += fmt.Sprintf(" (%s as %s)", cfg.Kafka.SASL.Mechanism, cfg.Kafka.SASL.Username)
	}
	if cfg.Kafka.TLS.CertFile != "" {
		proto += " with a client certificate"
	}
	return proto
}

// zooKeeperSecurity says how the ZooKeeper sessions authenticate.
func zooKeeperSecurity(cfg *config.Config) string {
	out := "plain TCP"
	if cfg.ZooKeeperTLS.Enable {
		out = "TLS"
	}
	if cfg.ZooKeeperAuth.Username != "" {
		return out + ", digest user " + cfg.ZooKeeperAuth.Username + " (creator-only-write ACL)"
	}
	return out + ", no credentials (nodes world-writable)"
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// redacted copies cfg with HTTP header values and the password and query
// values of the sink URL hidden (passwords themselves are never part of it: only the
// files or variables they are read from).
func redacted(cfg *config.Config) *config.Config {
	c := *cfg
	c.Sink.HTTP.URL = config.RedactURL(c.Sink.HTTP.URL)
	if len(c.Sink.HTTP.Headers) > 0 {
		h := make(map[string]string, len(c.Sink.HTTP.Headers))
		for k := range c.Sink.HTTP.Headers {
			h[k] = "<redacted>"
		}
		c.Sink.HTTP.Headers = h
	}
	return &c
}
