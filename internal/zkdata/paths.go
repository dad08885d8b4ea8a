package zkdata

import "strconv"

// Fixed paths of Kafka's ZooKeeper layout, without chroot.
const (
	ConsumersRootPath = "/consumers"
	BrokerIDsPath     = "/brokers/ids"
	TopicsPath        = "/brokers/topics"
)

// The path builders below are pure, safe for concurrent use and do not
// block. They do not check their arguments: validate group, consumer and
// topic names (see ValidateNodeName) before building paths from them.

// ConsumersPath returns /consumers/<group>.
func ConsumersPath(group string) string { return ConsumersRootPath + "/" + group }

// IDsPath returns /consumers/<group>/ids, the parent of member registrations.
func IDsPath(group string) string { return ConsumersPath(group) + "/ids" }

// IDPath returns /consumers/<group>/ids/<id>, a member registration.
func IDPath(group, id string) string { return IDsPath(group) + "/" + id }

// StaticPath returns /consumers/<group>/static, the parent of zkgroup's
// restart markers (Kafka's tools ignore it).
func StaticPath(group string) string { return ConsumersPath(group) + "/static" }

// StaticMemberPath returns /consumers/<group>/static/<id>: a persistent
// node, holding the member's registration, that tells the group to keep
// the member's partitions for it while it restarts.
func StaticMemberPath(group, id string) string { return StaticPath(group) + "/" + id }

// AssignmentPath returns /consumers/<group>/assignment: a persistent node
// holding the group's last computed assignment (GroupAssignment), which
// zkgroup members compute the next one from (Kafka's tools ignore it).
func AssignmentPath(group string) string { return ConsumersPath(group) + "/assignment" }

// OwnersPath returns /consumers/<group>/owners.
func OwnersPath(group string) string { return ConsumersPath(group) + "/owners" }

// OwnerTopicPath returns /consumers/<group>/owners/<topic>.
func OwnerTopicPath(group, topic string) string { return OwnersPath(group) + "/" + topic }

// OwnerPath returns /consumers/<group>/owners/<topic>/<p>.
func OwnerPath(group, topic string, p int32) string {
	return OwnerTopicPath(group, topic) + "/" + strconv.FormatInt(int64(p), 10)
}

// OffsetsPath returns /consumers/<group>/offsets.
func OffsetsPath(group string) string { return ConsumersPath(group) + "/offsets" }

// OffsetTopicPath returns /consumers/<group>/offsets/<topic>.
func OffsetTopicPath(group, topic string) string { return OffsetsPath(group) + "/" + topic }

// OffsetPath returns /consumers/<group>/offsets/<topic>/<p>.
func OffsetPath(group, topic string, p int32) string {
	return OffsetTopicPath(group, topic) + "/" + strconv.FormatInt(int64(p), 10)
}

// BrokerPath returns /brokers/ids/<id>.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.FormatInt(int64(id), 10) }

// TopicPath returns /brokers/topics/<topic>.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }
