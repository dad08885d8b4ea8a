package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/manager"
)

// errRefused marks an error where a server refused this client's
// credentials or certificate, or this client refused the server's
// certificate (exit status 3: retrying will not help).
var errRefused = errors.New("refused")

// Which server an error came from, for explain.
const (
	sideKafka     = "kafka"
	sideZooKeeper = "zookeeper"
)

// sideOf is the server an offset storage lives on.
func sideOf(storage string) string {
	if manager.Storage(storage) == manager.StorageZooKeeper {
		return sideZooKeeper
	}
	return sideKafka
}

// explain adds to err, when a server (Kafka or ZooKeeper: side) refused
// the credentials or a certificate did not verify, which setting to look
// at; such errors also wrap errRefused. Other errors are returned as they
// are. Pure.
func explain(err error, cfg *config.Config, side string) error {
	if err == nil {
		return nil
	}
	hint := refusal(err, cfg, side)
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w: %s: %w", errRefused, hint, err)
}

// refusal says which setting a security failure points at, or "".
func refusal(err error, cfg *config.Config, side string) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	kafkaSide := side == sideKafka
	tlsField, caField := "zookeeper_tls", "zookeeper_tls.ca_file"
	if kafkaSide {
		tlsField, caField = "kafka.tls", "kafka.tls.ca_file"
	}
	text := err.Error()
	switch {
	case errors.Is(err, sarama.ErrSASLAuthenticationFailed) || strings.Contains(text, "SASL Authentication failed"):
		return fmt.Sprintf("Kafka refused the SASL %s credentials of user %q: check kafka.sasl.username and its password (%s)",
			cfg.Kafka.SASL.Mechanism, cfg.Kafka.SASL.Username, passwordSource(cfg.Kafka.SASL.PasswordFile, cfg.Kafka.SASL.PasswordEnv))
	case errors.Is(err, sarama.ErrUnsupportedSASLMechanism):
		return fmt.Sprintf("the broker does not offer SASL mechanism %s on this listener: check kafka.sasl.mechanism", cfg.Kafka.SASL.Mechanism)
	case errors.As(err, &unknown):
		return fmt.Sprintf("the server's certificate is not signed by a CA in %s (%q)", caField, caOf(cfg, kafkaSide))
	case errors.As(err, &host):
		return fmt.Sprintf("the server's certificate is not valid for the name dialled: check %s.server_name or the address", tlsField)
	case errors.As(err, &invalid), errors.As(err, &verify):
		return fmt.Sprintf("the server's certificate did not verify: check %s", tlsField)
	case strings.Contains(text, "tls: bad certificate"), strings.Contains(text, "tls: certificate required"),
		strings.Contains(text, "tls: unknown certificate authority"), strings.Contains(text, "tls: certificate unknown"):
		return fmt.Sprintf("the server refused this client's certificate: check %s.cert_file and %s.key_file (mutual TLS)", tlsField, tlsField)
	case strings.Contains(text, "first record does not look like a TLS handshake"):
		return fmt.Sprintf("TLS is on (%s.enable) but the server answered in plain text: wrong port or listener", tlsField)
	case errors.Is(err, zk.ErrNoAuth):
		if cfg.ZooKeeperAuth.Username == "" {
			return "ZooKeeper refused a write: the group's nodes are protected by an ACL; set zookeeper_auth"
		}
		return fmt.Sprintf("ZooKeeper refused a write: the group's nodes were created with other credentials than user %q (zookeeper_auth)", cfg.ZooKeeperAuth.Username)
	case errors.Is(err, zk.ErrAuthFailed):
		return "ZooKeeper refused the credentials: check zookeeper_auth"
	}
	return ""
}

func passwordSource(file, env string) string {
	if file != "" {
		return "read from " + file
	}
	return "from $" + env
}

func caOf(cfg *config.Config, kafka bool) string {
	if kafka {
		return cfg.Kafka.TLS.CAFile
	}
	return cfg.ZooKeeperTLS.CAFile
}
