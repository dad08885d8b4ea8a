package offsets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// memStore is an in-memory Store for tests: Commit keeps the maximum, Reset
// sets. It logs every write and can fail chosen partitions. Safe for
// concurrent use.
type memStore struct {
	mu       sync.Mutex
	m        map[TopicPartition]int64
	writes   []string
	fetchErr map[TopicPartition]error
	writeErr map[TopicPartition]error
}

func newMemStore() *memStore {
	return &memStore{m: map[TopicPartition]int64{}, fetchErr: map[TopicPartition]error{}, writeErr: map[TopicPartition]error{}}
}

func (s *memStore) Fetch(_ context.Context, topic string, p int32) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := TopicPartition{topic, p}
	if err := s.fetchErr[tp]; err != nil {
		return 0, false, err
	}
	v, ok := s.m[tp]
	return v, ok, nil
}

func (s *memStore) write(op string, topic string, p int32, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := TopicPartition{topic, p}
	if err := s.writeErr[tp]; err != nil {
		return err
	}
	if cur, ok := s.m[tp]; op == "commit" && ok && next <= cur {
		return nil
	}
	s.m[tp] = next
	s.writes = append(s.writes, fmt.Sprintf("%s %s=%d", op, tp, next))
	return nil
}

func (s *memStore) Commit(_ context.Context, topic string, p int32, next int64) error {
	return s.write("commit", topic, p, next)
}

func (s *memStore) Reset(_ context.Context, topic string, p int32, next int64) error {
	return s.write("reset", topic, p, next)
}

func (s *memStore) CommitBatch(_ context.Context, batch []Offset) []error {
	errs := make([]error, len(batch))
	for i, o := range batch {
		errs[i] = s.write("commit", o.Topic, o.Partition, o.Next)
	}
	return errs
}

func (s *memStore) Release(context.Context, string, int32) error { return nil }
func (s *memStore) Close() error                                 { return nil }

func (s *memStore) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

func TestMigrateActions(t *testing.T) {
	type side struct {
		v  int64
		ok bool
	}
	none, at := side{}, func(v int64) side { return side{v, true} }
	tests := []struct {
		name     string
		from, to side
		opts     MigrateOptions
		action   string
		write    string // the write to the destination, "" for none
		finalTo  side
	}{
		{"source missing", none, at(5), MigrateOptions{}, ActionSkipMissing, "", at(5)},
		{"source missing, overwrite", none, at(5), MigrateOptions{Overwrite: true}, ActionSkipMissing, "", at(5)},
		{"destination missing", at(7), none, MigrateOptions{}, ActionCopy, "commit t/1=7", at(7)},
		{"destination behind", at(7), at(3), MigrateOptions{}, ActionCopy, "commit t/1=7", at(7)},
		{"destination at zero", at(7), at(0), MigrateOptions{}, ActionCopy, "commit t/1=7", at(7)},
		{"source at zero, destination missing", at(0), none, MigrateOptions{}, ActionCopy, "commit t/1=0", at(0)},
		{"equal", at(7), at(7), MigrateOptions{}, ActionSkipNotNewer, "", at(7)},
		{"equal, overwrite", at(7), at(7), MigrateOptions{Overwrite: true}, ActionSkipNotNewer, "", at(7)},
		{"destination ahead", at(7), at(9), MigrateOptions{}, ActionSkipNotNewer, "", at(9)},
		{"destination ahead, overwrite", at(7), at(9), MigrateOptions{Overwrite: true}, ActionCopy, "reset t/1=7", at(7)},
		{"behind, overwrite uses reset", at(7), at(3), MigrateOptions{Overwrite: true}, ActionCopy, "reset t/1=7", at(7)},
		{"dry run copy", at(7), at(3), MigrateOptions{DryRun: true}, ActionDryRun, "", at(3)},
		{"dry run overwrite", at(7), at(9), MigrateOptions{DryRun: true, Overwrite: true}, ActionDryRun, "", at(9)},
		{"dry run skip", at(7), at(9), MigrateOptions{DryRun: true}, ActionSkipNotNewer, "", at(9)},
		{"dry run missing", none, none, MigrateOptions{DryRun: true}, ActionSkipMissing, "", none},
	}
	tp := TopicPartition{"t", 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := newMemStore(), newMemStore()
			if tt.from.ok {
				from.m[tp] = tt.from.v
			}
			if tt.to.ok {
				to.m[tp] = tt.to.v
			}
			got, err := Migrate(context.Background(), from, to, []TopicPartition{tp}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := Migration{TopicPartition: tp, From: tt.from.v, FromOK: tt.from.ok, Action: tt.action}
			if tt.from.ok {
				want.To, want.ToOK = tt.to.v, tt.to.ok
			}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("report = %+v, want %+v", got, want)
			}
			if w := strings.Join(to.log(), ";"); w != tt.write {
				t.Fatalf("destination writes %q, want %q", w, tt.write)
			}
			if len(from.log()) != 0 {
				t.Fatalf("source written: %v", from.log())
			}
			v, ok, _ := to.Fetch(context.Background(), tp.Topic, tp.Partition)
			if (side{v, ok}) != tt.finalTo {
				t.Fatalf("destination holds %d,%v, want %+v", v, ok, tt.finalTo)
			}
		})
	}
}

func TestMigrateErrors(t *testing.T) {
	parts := []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		set   func(from, to *memStore)
		where string
	}{
		{"source fetch", func(from, _ *memStore) { from.fetchErr[parts[1]] = boom }, "source"},
		{"destination fetch", func(_, to *memStore) { to.fetchErr[parts[1]] = boom }, "destination"},
		{"destination write", func(_, to *memStore) { to.writeErr[parts[1]] = boom }, "destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := newMemStore(), newMemStore()
			for i, tp := range parts {
				from.m[tp] = int64(10 + i)
			}
			tc.set(from, to)
			got, err := Migrate(context.Background(), from, to, parts, MigrateOptions{})
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), `a/1`) || !strings.Contains(err.Error(), tc.where) {
				t.Fatalf("err = %v, want boom naming a/1 and %s", err, tc.where)
			}
			if len(got) != 1 || got[0].TopicPartition != parts[0] || got[0].Action != ActionCopy {
				t.Fatalf("report before the failure = %+v", got)
			}
			if _, ok := to.m[parts[2]]; ok {
				t.Fatal("migrate went on after the failure")
			}
		})
	}
	if _, err := Migrate(context.Background(), nil, newMemStore(), nil, MigrateOptions{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("nil source: %v", err)
	}
	got, err := Migrate(context.Background(), newMemStore(), newMemStore(), nil, MigrateOptions{})
	if err != nil || len(got) != 0 {
		t.Fatalf("no partitions: %v %v", got, err)
	}
}

// FuzzMigrate checks Migrate's invariants for any pair of offsets: the
// source is never written; a dry run never writes; without Overwrite the
// destination never moves backwards; after a copy it equals the source.
func FuzzMigrate(f *testing.F) {
	f.Add(int64(5), true, int64(3), true, false, false)
	f.Add(int64(5), true, int64(9), true, false, true)
	f.Add(int64(0), false, int64(9), true, true, true)
	f.Add(int64(4), true, int64(0), false, true, false)
	f.Fuzz(func(t *testing.T, fv int64, fok bool, tv int64, tok bool, dry, over bool) {
		if fv < 0 || tv < 0 {
			return // stores hold non-negative offsets only
		}
		tp := TopicPartition{"t", 0}
		from, to := newMemStore(), newMemStore()
		if fok {
			from.m[tp] = fv
		}
		if tok {
			to.m[tp] = tv
		}
		got, err := Migrate(context.Background(), from, to, []TopicPartition{tp}, MigrateOptions{DryRun: dry, Overwrite: over})
		if err != nil || len(got) != 1 {
			t.Fatalf("%v %v", got, err)
		}
		m := got[0]
		after, afterOK, _ := to.Fetch(context.Background(), "t", 0)
		if len(from.log()) != 0 {
			t.Fatal("source written")
		}
		if (dry || m.Action != ActionCopy) && len(to.log()) != 0 {
			t.Fatalf("action %s wrote %v", m.Action, to.log())
		}
		if tok && !over && (!afterOK || after < tv) {
			t.Fatalf("destination moved backwards from %d to %d", tv, after)
		}
		switch m.Action {
		case ActionCopy:
			if !afterOK || after != fv {
				t.Fatalf("copied, but destination holds %d", after)
			}
		case ActionSkipMissing:
			if fok {
				t.Fatal("skip-missing with a source offset")
			}
		case ActionSkipNotNewer:
			if !fok || !tok || tv < fv || (over && tv != fv) {
				t.Fatalf("skip-not-newer for %+v", m)
			}
		case ActionDryRun:
			if !dry {
				t.Fatal("dry-run without DryRun")
			}
		default:
			t.Fatalf("unknown action %q", m.Action)
		}
	})
}
