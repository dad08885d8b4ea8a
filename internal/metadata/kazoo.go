package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wvanbergen/kazoo-go"
)

// kazooStore is the store over kazoo-go and its samuel ZooKeeper client.
// Every kazoo and samuel value stays inside this file and zkerrors.go.
//
// Each armed watch gets a forwarder goroutine that waits for the watch's
// one event and reports the key. The client closes every pending watch
// channel after its goroutines have stopped (on Close) or when the session
// expires, so waiting for the forwarders after Close also waits for the
// client to stop.
type kazooStore struct {
	kz      *kazoo.Kazoo
	fire    func(watchKey)
	log     *slog.Logger
	stopMax time.Duration // how long close waits for the client

	fwd       sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// newKazooStore opens a session (the client connects in the background;
// the first read waits for it). fire is called, from a forwarder
// goroutine, once per fired watch.
func newKazooStore(servers []string, chroot string, cfg Config, fire func(watchKey), log *slog.Logger) (*kazooStore, error) {
	kc := kazoo.NewConfig()
	kc.Chroot = chroot
	kc.Timeout = cfg.SessionTimeout
	kc.Logger = zkLogger{log}
	kz, err := kazoo.NewKazoo(servers, kc)
	if err != nil {
		return nil, fmt.Errorf("metadata: connect zookeeper %v: %w", servers, err)
	}
	return &kazooStore{kz: kz, fire: fire, log: log, stopMax: 2*cfg.SessionTimeout + 5*time.Second}, nil
}

// forward starts the forwarder of a watch channel; its element type (the
// samuel client's event) is never named. A nil channel was not armed.
func forward[E any](s *kazooStore, ch <-chan E, key watchKey) bool {
	if ch == nil {
		return false
	}
	s.fwd.Add(1)
	go func() {
		defer s.fwd.Done()
		ev := <-ch
		s.log.Debug("metadata: watch fired", "root", key.root, "topic", key.topic, "event", fmt.Sprintf("%+v", ev))
		s.fire(key)
	}()
	return true
}

func (s *kazooStore) topics(watch bool) ([]string, bool, error) {
	var (
		list  kazoo.TopicList
		err   error
		armed bool
	)
	if watch {
		l, ch, werr := s.kz.WatchTopics()
		list, err = l, werr
		if werr == nil {
			armed = forward(s, ch, watchKey{root: true})
		}
	} else {
		list, err = s.kz.Topics()
	}
	if err != nil {
		return nil, false, translate(err)
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.Name)
	}
	return names, armed, nil
}

func (s *kazooStore) partitions(topic string, watch bool) ([]partMeta, bool, error) {
	t := s.kz.Topic(topic)
	var (
		list  kazoo.PartitionList
		err   error
		armed bool
	)
	if watch {
		list, armed, err = s.watchPartitions(t)
	} else {
		err = recovered(func() error {
			var perr error
			list, perr = t.Partitions()
			return perr
		})
	}
	if err != nil {
		return nil, armed, translate(err)
	}
	out := make([]partMeta, 0, len(list))
	for _, p := range list {
		if p == nil {
			continue
		}
		out = append(out, partMeta{ID: p.ID, Replicas: p.Replicas})
	}
	return out, armed, nil
}

// watchPartitions reads and watches a topic node. kazoo-go's decoder
// panics on partition ids that are not 0..n-1 after the watch was armed
// and its channel is lost; the watch is then armed again with Topic.Watch
// so that a later fix of the node is still seen.
func (s *kazooStore) watchPartitions(t *kazoo.Topic) (kazoo.PartitionList, bool, error) {
	var (
		list  kazoo.PartitionList
		armed bool
	)
	err := recovered(func() error {
		l, ch, werr := t.WatchPartitions()
		list = l
		armed = forward(s, ch, watchKey{topic: t.Name})
		return werr
	})
	var pe panicError
	if errors.As(err, &pe) && !armed {
		ch, werr := t.Watch()
		if werr == nil {
			armed = forward(s, ch, watchKey{topic: t.Name})
		}
	}
	return list, armed, err
}

// close closes the session and waits until the client has released every
// watch, which it does after its goroutines have stopped. It is idempotent.
func (s *kazooStore) close() error {
	s.closeOnce.Do(func() {
		_ = s.kz.Close() // always nil; blocks up to 1s for the server's answer
		done := make(chan struct{})
		go func() { s.fwd.Wait(); close(done) }()
		t := time.NewTimer(s.stopMax)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			s.closeErr = fmt.Errorf("%w within %v", ErrStuck, s.stopMax)
		}
	})
	return s.closeErr
}

// recovered runs f and turns a panic into a panicError.
func recovered(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError{v}
		}
	}()
	return f()
}
