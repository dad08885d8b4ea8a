// Package assign holds the partition assignment strategies of a
// ZooKeeper-coordinated Kafka consumer group.
//
// Every member of a group computes the assignment on its own from the same
// ZooKeeper view, so every Strategy here is a pure, deterministic function of
// the contents of its inputs: inputs are copied, de-duplicated and sorted
// internally, and the result never depends on input order, map iteration
// order, time or randomness. A partition is only given to a member
// subscribed to its topic; partitions nobody subscribes to are left out.
//
// Strategies:
//
//   - Range ("range"): Kafka's RangeAssignor, balanced per topic.
//   - RoundRobin ("roundrobin"): Kafka's RoundRobinAssignor.
//   - LeaderAware ("leader-aware", the default): balanced counts, each member
//     reading from as few leader brokers as possible.
//   - Sticky ("sticky"): rendezvous hashing with bounded load, so that a
//     membership change moves about P/N partitions, with no state kept
//     between runs.
//
// ByName maps a configured name to its Strategy.
package assign
