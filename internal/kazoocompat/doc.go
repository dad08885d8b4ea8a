// Package kazoocompat holds one test: kazoo-go, the ZooKeeper library of
// the Go consumers zkgroup replaces, reads a live zkgroup group, and
// zkgroup reads an instance that kazoo-go registered. It is a module of
// its own so that kazoo-go and the archived ZooKeeper client it uses stay
// out of zkgroup's go.mod, and so out of every embedder's module graph.
package kazoocompat
