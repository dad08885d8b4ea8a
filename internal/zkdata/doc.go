// Package zkdata encodes and decodes the ZooKeeper nodes of Kafka's
// ZooKeeper layout that a ZooKeeper-coordinated consumer group reads and
// writes, and builds their paths:
//
//	/brokers/ids/<id>                            broker registration (JSON)
//	/brokers/topics/<topic>                      partition replica lists (JSON)
//	/consumers/<group>/ids/<consumerId>          member registration (JSON)
//	/consumers/<group>/owners/<topic>/<p>        owner id (plain text)
//	/consumers/<group>/offsets/<topic>/<p>       next offset (plain decimal)
//
// The codecs are pure functions over byte slices: they do no I/O, never
// block, never panic on bad input, and are safe for concurrent use. Decoders
// ignore unknown fields, so newer registration versions still parse, but
// check the types and ranges of the fields they return. Every decoding error
// wraps ErrMalformed and is a *MalformedError naming the node and the field,
// for example:
//
//	zkdata: broker 3: endpoints[1] "FOO": no "://"
//
// Paths carry no chroot; the ZooKeeper client applies it.
package zkdata
