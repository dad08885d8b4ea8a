// Package scale holds the group-membership benchmarks of zkgroup against
// sarama's ConsumerGroup on the local test cluster (bench/README.md, "scale"):
//
//   - BenchmarkScale: many partitions, members joining 1 s apart, then
//     leaving 1 s apart, traffic throughout;
//   - BenchmarkJoinLeave: a small group where a fourth member joins and
//     leaves again, over several rounds;
//   - BenchmarkClose: Close alone, of a member owning half of 200
//     partitions and then of the last one, over several rounds.
//
// See ../README.md for the commands and how to read the output.
package scale
