// Package scale holds the group-membership benchmarks of zkgroup against
// sarama's ConsumerGroup and franz-go on the local test cluster (bench/README.md, "scale"):
//
//   - BenchmarkScale: many partitions, members joining 1 s apart, then
//     leaving 1 s apart, traffic throughout;
//   - BenchmarkJoinLeave: a small group where a fourth member joins and
//     leaves again, over several rounds;
//   - BenchmarkClose: Close alone, of a member owning half of 200
//     partitions and then of the last one, over several rounds;
//   - BenchmarkRollingRestart: every member restarted in turn (static
//     membership);
//   - BenchmarkIdle: what an idle member costs, the members in this
//     process;
//   - BenchmarkIdleProcess: the same, each member in a process of its
//     own (this test binary run again as one member).
//
// See ../README.md for the commands and how to read the output.
package scale
