// Package throughput holds the read-throughput benchmark of zkgroup
// against sarama's ConsumerGroup and franz-go on the local test cluster:
// one pre-filled topic read through from the start by one member of a
// fresh group, each side once per round. See ../README.md, "throughput".
package throughput
