package faultproxy

// Cut closes every current connection pair at once, in both directions,
// with a TCP RST where possible (SO_LINGER 0), so both the client and the
// upstream server see the connection fail. Stalled connections are cut too.
// New connections are still accepted and forwarded. Safe for concurrent
// use; blocks only on the proxy's internal mutex, not on the goroutines of
// the cut connections (Close waits for those).
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeAllLocked()
}

// Block cuts every current connection like Cut and refuses new ones until
// Unblock: they are accepted and reset immediately, so the client sees the
// connection fail on its first read or write. Safe for concurrent use;
// blocks only on the proxy's internal mutex.
func (p *Proxy) Block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	p.closeAllLocked()
}

// Unblock lets new connections through again after Block. It has no effect
// if the proxy is not blocked. Safe for concurrent use; blocks only on the
// proxy's internal mutex.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

// Stall stops forwarding bytes in both directions on every connection,
// current and future, without closing anything: data read from either side
// is held (not dropped) and end-of-stream is not propagated, so neither
// peer sees a TCP error. New connections are accepted but do not dial
// upstream until Resume. Bytes that a forwarding goroutine has already
// started writing when Stall is called may still be delivered. Cut, Block
// and Close still work on stalled connections. Safe for concurrent use;
// blocks only on the proxy's internal mutex.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Resume ends a Stall: held bytes are delivered in order and forwarding
// continues. It has no effect if the proxy is not stalled. Safe for
// concurrent use; blocks only on the proxy's internal mutex.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	p.flow.Broadcast()
}
