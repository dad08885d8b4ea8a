package saramaconf

import (
	"testing"

	"github.com/IBM/sarama"
)

func TestNewAndFrom(t *testing.T) {
	c := New("")
	if c.Version != sarama.V2_1_0_0 || c.ClientID != "zkgroup" || c.Validate() != nil {
		t.Fatalf("New(\"\"): version %v, client id %q, validate %v", c.Version, c.ClientID, c.Validate())
	}
	if New("x").ClientID != "x" {
		t.Error("New(\"x\") did not keep the client id")
	}
	if From(nil, "y").ClientID != "y" {
		t.Error("From(nil, \"y\") is not New(\"y\")")
	}
	base := New("base")
	cp := From(base, "ignored")
	cp.ClientID, cp.Consumer.Return.Errors = "changed", !base.Consumer.Return.Errors
	if base.ClientID != "base" || cp == base {
		t.Error("From did not copy base")
	}
	if cp.Consumer.Return.Errors == base.Consumer.Return.Errors {
		t.Error("a change to the copy reached base")
	}
}
