package manager

import (
	"testing"

	"github.com/IBM/sarama"
)

// TestRackPlumbing: Config.Rack reaches the clients' sarama config (the
// fetcher sends it), overriding Sarama.RackID without changing the
// caller's config; empty, Sarama.RackID stays.
func TestRackPlumbing(t *testing.T) {
	base := sarama.NewConfig()
	base.RackID = "a"
	if got := saramaConfig(&Config{Sarama: base, Rack: "b"}).RackID; got != "b" || base.RackID != "a" {
		t.Errorf("Rack b over RackID a: %q (base %q)", got, base.RackID)
	}
	if got := saramaConfig(&Config{Sarama: base}).RackID; got != "a" {
		t.Errorf("no Rack over RackID a: %q", got)
	}
}
