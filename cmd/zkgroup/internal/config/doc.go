// Package config is the configuration of the zkgroup daemon: a YAML file
// (unknown keys are errors naming the key and its line), overridden by
// environment variables ZKGROUP_<FIELD> (ZKGROUP_GROUP,
// ZKGROUP_PARTITION_MAX_UNACKED, ...) and then by command-line flags
// (--group, --partition-max-unacked, ...). Validate checks every field and
// names the offending one together with where its value came from.
//
// Nothing in this package does I/O apart from reading the file Load is
// given; nothing talks to ZooKeeper or Kafka.
package config
