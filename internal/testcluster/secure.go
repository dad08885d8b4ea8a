package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/kafkasasl"
)

// Users of a Secure cluster's SASL_SSL listener. The SCRAM users are
// created with Kafka's own kafka-configs tool (SCRAM-SHA-512 and
// SCRAM-SHA-256 credentials each); the PLAIN user is in the listener's
// JAAS configuration.
const (
	ScramUser     = "alice"
	ScramPassword = "alice-s3cret"
	PlainUser     = "bob"
	PlainPassword = "bob-s3cret"
)

// ConfigCommandClass is the main class of kafka-configs.
const ConfigCommandClass = "kafka.admin.ConfigCommand"

// zooKeeperTLSProps are the JVM properties of ZooKeeper's secure client
// port: the Netty connection factory (the NIO one has no TLS), the PKI's
// server certificate and CA as PEM stores, client certificates required.
func zooKeeperTLSProps(p *PKI) []string {
	return []string{
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"-Dzookeeper.ssl.keyStore.location=" + p.ServerPEM,
		"-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + p.CAFile,
		"-Dzookeeper.ssl.trustStore.type=PEM",
		"-Dzookeeper.ssl.clientAuth=need",
	}
}

// brokerSecurity is the server.properties of the secured listeners.
func brokerSecurity(p *PKI) string {
	return fmt.Sprintf(`listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";
ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.truststore.type=PEM
ssl.truststore.location=%s
ssl.endpoint.identification.algorithm=
listener.name.mtls.ssl.client.auth=required
`, PlainUser, PlainPassword, p.ServerPEM, p.CAFile)
}

// createUsers creates the SCRAM user with kafka-configs over PLAINTEXT and
// waits until the SASL_SSL listener accepts it.
func (c *Cluster) createUsers(ctx context.Context) error {
	addrs := c.Addrs()
	args := append(toolArgs(c.lib, c.dir), ConfigCommandClass,
		"--bootstrap-server", strings.Join(addrs, ","), "--alter",
		"--add-config", fmt.Sprintf("SCRAM-SHA-512=[password=%s],SCRAM-SHA-256=[password=%s]", ScramPassword, ScramPassword),
		"--entity-type", "users", "--entity-name", ScramUser)
	cmd := exec.CommandContext(ctx, "java", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testcluster: kafka-configs --add-config SCRAM for %s: %w\n%s", ScramUser, err, out.String())
	}
	tlsCfg, err := c.pki.ClientTLS(false)
	if err != nil {
		return err
	}
	for {
		sc := sarama.NewConfig()
		sc.Version = sarama.V2_1_0_0
		sc.Net.TLS.Enable, sc.Net.TLS.Config = true, tlsCfg
		sc.Net.SASL.Enable, sc.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.User, sc.Net.SASL.Password = ScramUser, ScramPassword
		sc.Net.SASL.SCRAMClientGeneratorFunc = kafkasasl.NewSCRAMClient(kafkasasl.SHA512)
		sc.Net.DialTimeout, sc.Net.ReadTimeout = 2*time.Second, 5*time.Second
		br := sarama.NewBroker(c.SecureAddrs("SASL_SSL")[0])
		err := br.Open(sc)
		if err == nil {
			_, err = br.GetMetadata(&sarama.MetadataRequest{Version: 7})
			br.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testcluster: SCRAM user %s not accepted on SASL_SSL: %v: %w", ScramUser, err, ctx.Err())
		case <-time.After(200 * time.Millisecond): // polling: the credential propagates without an event
		}
	}
}

// PKI returns the certificates of a Secure cluster (nil otherwise).
func (c *Cluster) PKI() *PKI { return c.pki }

// SecureAddrs returns "127.0.0.1:port" of every running broker's listener
// "SASL_SSL" or "MTLS" of a Secure cluster (nil otherwise).
func (c *Cluster) SecureAddrs(listener string) []string {
	var out []string
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		if !b.proc.running() {
			continue
		}
		switch listener {
		case "SASL_SSL":
			if b.saslPort != 0 {
				out = append(out, fmt.Sprintf("127.0.0.1:%d", b.saslPort))
			}
		case "MTLS":
			if b.mtlsPort != 0 {
				out = append(out, fmt.Sprintf("127.0.0.1:%d", b.mtlsPort))
			}
		}
	}
	return out
}

// ZooKeeperSecureConnect returns the connect string (with the chroot) of
// ZooKeeper's secure client port of a Secure cluster ("" otherwise).
func (c *Cluster) ZooKeeperSecureConnect() string {
	if c.zkSecurePort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d%s", c.zkSecurePort, c.opts.Chroot)
}

// toolArgs are the JVM flags of a short-lived Kafka tool: small heap,
// errors only on stderr.
func toolArgs(lib, dir string) []string {
	return []string{
		"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-Djava.awt.headless=true",
		"-Dlog4j.configuration=file:" + filepath.Join(dir, "tools-log4j.properties"),
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "tools-log4j2.properties"),
		"-cp", filepath.Join(lib, "*"),
	}
}
