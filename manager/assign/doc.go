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
// A Strategy is a value with a name: Balanced(), Range() and the others
// return the package's strategies, ByName maps a configured name to one of
// them and Names lists the names; Func wraps a function of one's own. The
// members of a group publish their strategy's name and compare it, since
// members that compute with different strategies never agree.
package assign
