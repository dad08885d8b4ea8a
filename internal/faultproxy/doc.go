// Package faultproxy is an in-process TCP proxy for integration tests that
// need to break the network path between ONE client and a real server
// (ZooKeeper, a Kafka broker) running on loopback.
//
// The test starts a Proxy in front of the server's address and gives the
// client under test Proxy.Addr instead of the server's address. It can then
// inject faults that affect only that client:
//
//   - Cut closes every current connection (with a TCP RST where possible),
//     while still accepting new ones — a dropped connection.
//   - Block does the same and also refuses new connections until Unblock —
//     the server is unreachable.
//   - Stall keeps every connection open but forwards no bytes in either
//     direction until Resume; held bytes are then delivered in order —
//     a network partition or frozen peer that produces no TCP error.
//   - SetUpstream points new connections at another address, for example
//     after the server restarted on a different port.
//
// The proxy listens on 127.0.0.1 only and uses nothing but the standard
// library. Every method of Proxy is safe for concurrent use, and Close
// returns only once every goroutine the proxy started has returned.
package faultproxy
