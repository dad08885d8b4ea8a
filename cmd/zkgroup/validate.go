package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

// cmdValidate loads and validates a configuration like run does, reading
// the password files and variables and the TLS files it names, without
// connecting anywhere. Exit 0 when valid, 2 when not.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
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
	if *asJSON {
		_ = printJSON(stdout, map[string]any{"valid": true, "config": redacted(cfg)})
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: configuration OK\n", nameOr(path, "(no file)"))
	fmt.Fprintf(stdout, "  group %s, subscription %s, zookeeper %s\n", cfg.Group, cfg.Subscription, cfg.ZooKeeper)
	fmt.Fprintf(stdout, "  sink %s (on_failure %s, %d attempts), offsets in %s, admin %s\n",
		sinkSummary(cfg.Sink), cfg.Sink.OnFailure, cfg.Sink.Retry.MaxAttempts, cfg.OffsetStorage, nameOr(cfg.Admin.Listen, "off"))
	fmt.Fprintf(stdout, "  kafka: %s, client id %s, protocol %s; zookeeper: %s\n",
		kafkaSecurity(cfg), cfg.Kafka.ClientID, cfg.Kafka.Version, zooKeeperSecurity(cfg))
	return exitOK
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

// redacted copies cfg with HTTP header values and the password of the
// sink URL hidden (passwords themselves are never part of it: only the
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
