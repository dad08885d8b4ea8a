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
// The view includes who holds each partition's claim now
// (Partition.Owner) and each partition's preferred leader
// (Partition.Leader). Only Balanced reads the owners.
//
// Strategies:
//
//   - Balanced ("balanced", the default): balanced counts per subscription
//     class with the fewest moves from the current owners: a join moves
//     about P/N partitions, a leave only the leaver's. Which partitions move,
//     and where, follows fixed leader preferences, so that starting from
//     nothing the result is LeaderAware's and members that read the owners
//     at different moments of a hand-over still compute the same plan.
//   - Range ("range"): Kafka's RangeAssignor, balanced per topic.
//   - RoundRobin ("roundrobin"): Kafka's RoundRobinAssignor.
//   - LeaderAware ("leader-aware"): balanced counts, each member reading
//     from as few leader brokers as possible, ignoring the owners (most
//     partitions move on any membership change).
//   - Sticky ("sticky"): rendezvous hashing with bounded load, so that a
//     membership change moves about P/N partitions (somewhat more, see
//     Sticky), with no state kept between runs and no owners needed.
//
// ByName maps a configured name to its Strategy.
package assign
