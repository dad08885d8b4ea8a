// Package daemon benchmarks the zkgroup daemon (`zkgroup run`, built from
// ./cmd/zkgroup) beside the command-line consumers users would run
// instead (kcat, Kafka's console consumer), and its HTTP and exec sinks in
// per-message and batch mode, on a real cluster (internal/testcluster).
// Everything is in the _test files: BenchmarkDaemon; see ../README.md.
package daemon
