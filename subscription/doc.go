// Package subscription describes which Kafka topics a ZooKeeper-coordinated
// consumer group subscribes to, in the three forms Kafka's ZooKeeper consumer
// registers under /consumers/<group>/ids/<consumerId>:
//
//   - static: an explicit list of topic names ("pattern":"static");
//   - whitelist: every topic whose whole name matches a regular expression
//     ("pattern":"white_list");
//   - blacklist: every topic whose whole name does not match a regular
//     expression ("pattern":"black_list").
//
// Wildcard expressions are normalised the way Kafka's TopicFilter does it
// (trim, ',' becomes '|', spaces removed, leading and trailing quotes
// stripped) and must match the whole topic name, like Java's
// String.matches. They are compiled with Go's RE2 syntax, so Java-only
// constructs such as back-references or look-arounds are rejected.
//
// Internal topics (names beginning with "__", such as __consumer_offsets)
// are excluded by default, mirroring Kafka's exclude.internal.topics=true,
// except that a static subscription always includes the topics it names.
//
// A Subscription is immutable and safe for concurrent use; no function in
// this package blocks.
package subscription
