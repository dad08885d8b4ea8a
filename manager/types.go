package manager

import (
	"errors"
	"fmt"

	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/subscription"
)

// Subscription is what a member consumes: static topics, or a whitelist
// or blacklist pattern (package subscription).
type Subscription = subscription.Subscription

// Static subscribes to the named topics.
func Static(topics ...string) (*Subscription, error) { return subscription.Static(topics...) }

// Whitelist subscribes to every topic matching the regular expression.
func Whitelist(pattern string) (*Subscription, error) { return subscription.Whitelist(pattern) }

// Blacklist subscribes to every topic not matching the regular expression.
func Blacklist(pattern string) (*Subscription, error) { return subscription.Blacklist(pattern) }

// publicErr is err as a call on a partition returns it: a Committer that
// closed means the consumer did (ErrClosed).
func publicErr(err error) error {
	if errors.Is(err, partition.ErrCommitterClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
