package manager

import (
	"testing"
	"time"
)

// TestKafkaBound: KafkaUnreachableTimeout 0 is Kafka's session.timeout.ms
// default (45 s), or SessionTimeout when that is longer; a set value is
// used as it is.
func TestKafkaBound(t *testing.T) {
	for _, tc := range []struct {
		session, set, want time.Duration
	}{
		{10 * time.Second, 0, 45 * time.Second},
		{time.Minute, 0, time.Minute},
		{10 * time.Second, 6 * time.Second, 6 * time.Second},
		{time.Minute, 2 * time.Minute, 2 * time.Minute},
	} {
		c := NewConfig()
		c.SessionTimeout, c.KafkaUnreachableTimeout = tc.session, tc.set
		if got := c.kafkaBound(); got != tc.want {
			t.Errorf("session %v, KafkaUnreachableTimeout %v: bound %v, want %v", tc.session, tc.set, got, tc.want)
		}
	}
}
