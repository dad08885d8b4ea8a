package offsets

import (
	"context"
	"fmt"
)

// Actions reported in Migration.Action.
const (
	// ActionCopy: the source offset was written to the destination.
	ActionCopy = "copy"
	// ActionSkipMissing: the source has no committed offset.
	ActionSkipMissing = "skip-missing"
	// ActionSkipNotNewer: the destination already holds an offset >= the
	// source's (and Overwrite is off, or the offsets are equal).
	ActionSkipNotNewer = "skip-not-newer"
	// ActionDryRun: a copy would have happened, but DryRun is set.
	ActionDryRun = "dry-run"
)

// MigrateOptions configures Migrate. The zero value copies forward only and
// writes.
type MigrateOptions struct {
	// DryRun reports what would be copied without writing.
	DryRun bool
	// Overwrite copies even when the destination is ahead of the source,
	// moving the destination backwards (with Store.Reset).
	Overwrite bool
}

// Migration reports what Migrate did for one partition. From/FromOK is the
// source's offset, To/ToOK the destination's offset before the migration.
// It is a plain value, safe for concurrent reads.
type Migration struct {
	TopicPartition
	From   int64
	FromOK bool
	To     int64
	ToOK   bool
	Action string // one of the Action constants
}

// Migrate copies the committed offsets of parts from one store to another,
// in order, and reports what it did for each partition. Offsets only move
// forward (Store.Commit) unless opts.Overwrite is set, which uses Store.Reset
// and may move the destination backwards; equal offsets are never
// rewritten. It stops at the first failing partition and returns the report
// of the partitions before it together with the error (which names the
// partition). Safe for concurrent use if both stores are; blocks on both
// stores.
func Migrate(ctx context.Context, from, to Store, parts []TopicPartition, opts MigrateOptions) ([]Migration, error) {
	if from == nil || to == nil {
		return nil, fmt.Errorf("%w: migrate: source and destination stores must not be nil", ErrConfig)
	}
	out := make([]Migration, 0, len(parts))
	for _, tp := range parts {
		m, err := migrateOne(ctx, from, to, tp, opts)
		if err != nil {
			return out, fmt.Errorf("offsets: migrate %s: %w", tp, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func migrateOne(ctx context.Context, from, to Store, tp TopicPartition, opts MigrateOptions) (Migration, error) {
	m := Migration{TopicPartition: tp}
	var err error
	if m.From, m.FromOK, err = from.Fetch(ctx, tp.Topic, tp.Partition); err != nil {
		return m, fmt.Errorf("source: %w", err)
	}
	if !m.FromOK {
		m.From = 0
		m.Action = ActionSkipMissing
		return m, nil
	}
	if m.To, m.ToOK, err = to.Fetch(ctx, tp.Topic, tp.Partition); err != nil {
		return m, fmt.Errorf("destination: %w", err)
	}
	if !m.ToOK {
		m.To = 0
	}
	switch {
	case m.ToOK && m.To == m.From, m.ToOK && m.To > m.From && !opts.Overwrite:
		m.Action = ActionSkipNotNewer
		return m, nil
	case opts.DryRun:
		m.Action = ActionDryRun
		return m, nil
	}
	if opts.Overwrite {
		err = to.Reset(ctx, tp.Topic, tp.Partition, m.From)
	} else {
		err = to.Commit(ctx, tp.Topic, tp.Partition, m.From)
	}
	if err != nil {
		return m, fmt.Errorf("destination: %w", err)
	}
	m.Action = ActionCopy
	return m, nil
}
