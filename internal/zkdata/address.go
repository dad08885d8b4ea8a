package zkdata

import (
	"net"
	"strconv"
	"strings"
)

// Address returns the "host:port" to dial for listener, joined with
// net.JoinHostPort so IPv6 hosts are bracketed. Listener names compare
// case-insensitively.
//
// With listener "" it picks, in order: the endpoint named PLAINTEXT; the
// legacy host and port; the first endpoint whose security protocol (from
// SecurityProtocols) is PLAINTEXT. With a named listener it picks that
// endpoint. Otherwise it returns a *NoListenerError, wrapping ErrNoListener,
// that names the broker and listener and lists the available listeners.
// It is pure, safe for concurrent use, and does not block.
func (b Broker) Address(listener string) (string, error) {
	if listener != "" {
		if e, ok := b.endpoint(listener); ok {
			return e.addr(), nil
		}
		return "", b.noListener(listener)
	}
	if e, ok := b.endpoint(Plaintext); ok {
		return e.addr(), nil
	}
	if b.Host != "" && b.Port > 0 {
		return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)), nil
	}
	for _, e := range b.Endpoints {
		if strings.EqualFold(b.SecurityProtocols[e.Listener], Plaintext) {
			return e.addr(), nil
		}
	}
	return "", b.noListener("")
}

// endpoint returns the first endpoint called listener, ignoring case.
func (b Broker) endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if strings.EqualFold(e.Listener, listener) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// noListener builds the error for a missing listener.
func (b Broker) noListener(listener string) error {
	avail := make([]string, 0, len(b.Endpoints))
	for _, e := range b.Endpoints {
		avail = append(avail, e.Listener)
	}
	return &NoListenerError{BrokerID: b.ID, Listener: listener, Available: avail}
}
