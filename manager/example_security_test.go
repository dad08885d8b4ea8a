package manager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"os"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/kafkasasl"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// A secured deployment: Kafka over SASL_SSL with SCRAM-SHA-512 (through
// Config.Sarama, the base of every Kafka client the consumer opens),
// ZooKeeper digest credentials (the group's nodes then get a
// creator-only-write ACL) and ZooKeeper's secure client port
// (Config.ZooKeeperTLS). Brokers are given because the Kafka cluster runs
// in KRaft mode and registers none in ZooKeeper. Outside an example, read
// the passwords from a file or the environment, never from the source.
func ExampleJoin_secured() {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile("/etc/zkgroup/ca.pem"); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	s := sarama.NewConfig()
	s.ClientID = "billing"
	s.Version = sarama.V2_1_0_0 // served by Kafka 2.1 to 4.x
	s.Net.TLS.Enable = true
	s.Net.TLS.Config = tlsCfg
	s.Net.SASL.Enable = true
	s.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	s.Net.SASL.User = "billing"
	s.Net.SASL.Password = secret("KAFKA_PASSWORD")
	s.Net.SASL.SCRAMClientGeneratorFunc = kafkasasl.NewSCRAMClient(kafkasasl.SHA512)

	cfg := manager.NewConfig()
	cfg.Sarama = s
	cfg.Brokers = []string{"kafka1:9094", "kafka2:9094", "kafka3:9094"}
	cfg.Auth = []manager.ZooKeeperAuth{{Scheme: "digest", Credentials: "billing:" + secret("ZK_PASSWORD")}}
	cfg.ZooKeeperTLS = tlsCfg
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("SASL", cfg.Sarama.Net.SASL.Mechanism, "over TLS:", cfg.Sarama.Net.TLS.Enable, "ZooKeeper over TLS:", cfg.ZooKeeperTLS != nil)

	join := func() {
		sub, _ := subscription.Static("orders")
		c, err := manager.Join(context.Background(), "billing", sub, "zk1:2281,zk2:2281/zkgroup", cfg)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		for msg, err := range c.Each(context.Background()) {
			if err != nil {
				log.Fatal(err)
			}
			msg.Ack()
		}
	}
	_ = join // needs the cluster
	// Output: SASL SCRAM-SHA-512 over TLS: true ZooKeeper over TLS: true
}

// secret reads a password from the environment (a placeholder when unset,
// for this example only).
func secret(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return "placeholder"
}
