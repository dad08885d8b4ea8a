package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/listoffsets"
	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// conns is the consumer's part that owns its connections and the offset
// store: opened by Join's steps (join), closed together by close once
// nothing uses them.
type conns struct {
	session *zkconn.Session
	meta    metaSource
	client  sarama.Client
	fetcher *fetch.Fetcher // fetches every owned partition
	// store is the consumer's one handle on the offset store: bounded by
	// Kafka's reachability (newKafkaWatch) with Kafka storage; commits
	// makes the partitions' routine commits over it (store.go).
	store   store
	commits *partition.Committer
	// offsetClient is the client of commits, kept off the fetch
	// connections. offsetLister answers offset queries (ListOffsets) with
	// client's leaders over connections of its own; lister is client with
	// its GetOffset answered by offsetLister, the client of consumer and
	// partitions.
	offsetClient sarama.Client
	offsetLister *listoffsets.Lister
	lister       *listoffsets.Client
}

// close closes whatever is open, the session last.
func (cs *conns) close(log *slog.Logger) {
	if cs.meta != nil {
		_ = cs.meta.Close()
	}
	if cs.fetcher != nil {
		_ = cs.fetcher.Close()
	}
	if cs.commits != nil {
		_ = cs.commits.Close()
	}
	if cs.store != nil {
		if err := cs.store.Close(); err != nil {
			log.Warn("closing the offset store", "error", err)
		}
	}
	if cs.offsetLister != nil {
		_ = cs.offsetLister.Close()
	}
	if cs.offsetClient != nil {
		_ = cs.offsetClient.Close()
	}
	if cs.client != nil {
		_ = cs.client.Close()
	}
	if cs.session != nil {
		cs.session.Close()
	}
}

// dialZooKeeper opens the member's ZooKeeper session.
func (cs *conns) dialZooKeeper(ctx context.Context, cfg *Config, log *slog.Logger, servers []string, chroot string) error {
	var auth []zkconn.Auth
	for _, a := range cfg.Auth {
		auth = append(auth, zkconn.Auth{Scheme: a.Scheme, Credentials: []byte(a.Credentials)})
	}
	var err error
	cs.session, err = zkconn.DialContext(ctx, zkconn.Config{
		Servers: servers, Chroot: chroot, SessionTimeout: cfg.SessionTimeout,
		Auth: auth, Logger: log, TLS: cfg.ZooKeeperTLS,
		MaxRequest: zkconn.MaxRequestMember, // a member's requests are short (see zkconn's Buffers)
		MaxReply:   cmp.Or(cfg.ZooKeeperMaxReply, DefaultZooKeeperMaxReply), MaxReplyField: "Config.ZooKeeperMaxReply",
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err)
	}
	return nil
}

// brokerList returns Config.Brokers, or else the brokers registered in
// ZooKeeper.
func (cs *conns) brokerList(cfg *Config, log *slog.Logger) ([]string, error) {
	if len(cfg.Brokers) > 0 {
		return cfg.Brokers, nil
	}
	brokers, skipped, err := cs.session.Brokers(cfg.Listener)
	for _, e := range skipped {
		log.Warn("broker registration skipped", "error", e)
	}
	if errors.Is(err, zkconn.ErrNoBrokerRegistered) {
		err = fmt.Errorf("%w (Kafka 4 and other KRaft clusters register none in ZooKeeper; or the chroot is wrong): give the brokers in Config.Brokers", err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJoin, err)
	}
	return brokers, nil
}
