package ops

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// Member is one registered group member.
type Member struct {
	ID           string    `json:"id"`
	Pattern      string    `json:"pattern"`
	Subscription []string  `json:"subscription"`
	Registered   time.Time `json:"registered,omitzero"`
	Partitions   int       `json:"owned_partitions"`
	// Host and ClientID: see MemberHost and MemberClientID ("-" when
	// unknown).
	Host     string `json:"host"`
	ClientID string `json:"client_id"`
	// Strategy is the assignment strategy the member publishes in its
	// registration ("zkgroup_strategy"); "" for a member that publishes
	// none (a JVM consumer, an older zkgroup).
	Strategy string `json:"strategy"`
	Error    string `json:"error,omitempty"` // unreadable registration
	czxid    int64  // of the registration: the oldest member's rules
}

// StrategyMismatch says that the members publish different assignment
// strategies: they then compute with the strategy of the oldest member
// publishing one (see manager.StrategyMismatchError), and a member that
// does not know it claims nothing.
type StrategyMismatch struct {
	// Strategies maps each strategy published to the members publishing
	// it, sorted.
	Strategies map[string][]string `json:"strategies"`
	// Oldest is the oldest member publishing a strategy, and InForce its
	// strategy, which the members compute with.
	Oldest  string `json:"oldest"`
	InForce string `json:"in_force"`
}

// Row is one partition, with the columns of kafka-consumer-groups
// --describe. Offsets and lag of -1 are unknown ("-").
type Row struct {
	Group         string `json:"group"`
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	ConsumerID    string `json:"consumer_id"`
	Host          string `json:"host"`
	ClientID      string `json:"client_id"`
	// ClaimToken is the fencing token the committed offset was written
	// under (the czxid of that claim's owner node; Kafka offset storage
	// only), or 0 when unknown: a commit under an older claim than the
	// owner's is a stale one.
	ClaimToken int64 `json:"claim_token,omitempty"`
}

// Description is a group as describe prints it.
type Description struct {
	Group         string `json:"group"`
	OffsetStorage string `json:"offset_storage"`
	// OffsetStorageNote says why OffsetStorage was chosen when none was
	// configured (see ChooseStorage); "" when it was.
	OffsetStorageNote string   `json:"offset_storage_note,omitempty"`
	Members           []Member `json:"members"`
	Partitions        []Row    `json:"partitions"`
	// StrategyMismatch is set while the members publish different
	// assignment strategies.
	StrategyMismatch *StrategyMismatch `json:"strategy_mismatch,omitempty"`
	// Away are the static members that stopped and whose partitions the
	// group keeps, unowned, for their restart (see AwayMembers).
	Away []Away `json:"away_members"`
}

// DescribeInput is what Describe reads from.
type DescribeInput struct {
	Session *zkconn.Session
	// Committed are the group's committed offsets (KafkaCommitted or
	// ZooKeeperCommitted).
	Committed Offsets
	// Claims are the fencing tokens of the committed offsets (KafkaClaims;
	// nil for ZooKeeper storage, which keeps none).
	Claims Offsets
	// LogEnd returns a partition's log-end offset; nil leaves it unknown.
	LogEnd func(topic string, partition int32) (int64, error)
	Group  string
	// Storage names where Committed came from, for the output, and
	// StorageNote why, when it was chosen rather than configured.
	Storage, StorageNote string
	// Topics and Partitions read the cluster's topics and a topic's
	// partitions, for the topics the members subscribe to (KafkaTopics
	// and KafkaPartitions; a KRaft cluster has none in ZooKeeper). Nil:
	// from ZooKeeper's /brokers/topics.
	Topics     func() ([]string, error)
	Partitions func(topic string) ([]int32, error)
}

// Describe lists the group's members (with their subscriptions), and every
// partition that has a committed offset, an owner, or belongs to a topic a
// member subscribes to, with its owner, committed and log-end offsets and
// lag. It fails with ErrNoGroup when the group has no node in ZooKeeper and
// no committed offset. Blocks on ZooKeeper and on LogEnd.
func Describe(in DescribeInput) (*Description, error) {
	s, group := in.Session, in.Group
	d := &Description{Group: group, OffsetStorage: in.Storage, OffsetStorageNote: in.StorageNote, Members: []Member{}, Partitions: []Row{}}
	exists, _, err := s.Exists(zkdata.ConsumersPath(group))
	if err != nil {
		return nil, fmt.Errorf("ops: reading %s: %w", zkdata.ConsumersPath(group), err)
	}
	if !exists && len(in.Committed) == 0 {
		where := in.Storage
		if in.StorageNote != "" {
			where = "ZooKeeper or Kafka"
		}
		return nil, fmt.Errorf("%w: %q has no node %s%s and no committed offsets in %s", ErrNoGroup, group, s.Chroot(), zkdata.ConsumersPath(group), where)
	}
	ids, err := Members(s, group)
	if err != nil {
		return nil, err
	}
	owners, err := Owners(s, group)
	if err != nil {
		return nil, err
	}
	parts := map[manager.TopicPartition]bool{}
	for t, ps := range in.Committed {
		for p := range ps {
			parts[manager.TopicPartition{Topic: t, Partition: p}] = true
		}
	}
	owned := map[string]int{}
	for t, ps := range owners {
		for p, o := range ps {
			parts[manager.TopicPartition{Topic: t, Partition: p}] = true
			owned[o]++
		}
	}
	var subs []*subscription.Subscription
	members := map[string]Member{}
	for _, id := range ids {
		m := Member{ID: id, Subscription: []string{}, Host: MemberHost(group, id, nil), ClientID: "-"}
		data, stat, err := s.Get(zkdata.IDPath(group, id))
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("ops: reading %s: %w", zkdata.IDPath(group, id), err)
		}
		reg, err := zkdata.ParseMemberRegistration(id, data)
		if err != nil {
			m.Error = err.Error()
			d.Members = append(d.Members, m)
			continue
		}
		m.Host, m.ClientID = MemberHost(group, id, data), MemberClientID(data)
		m.Pattern, m.Strategy, m.czxid = reg.Pattern, reg.Strategy, stat.Czxid
		for k := range reg.Subscription {
			m.Subscription = append(m.Subscription, k)
		}
		sort.Strings(m.Subscription)
		if reg.Timestamp > 0 {
			m.Registered = time.UnixMilli(reg.Timestamp).UTC()
		}
		for o, n := range owned {
			if o == id || !slices.Contains(ids, o) && isThreadOf(o, id) {
				m.Partitions += n
			}
		}
		if sub, err := subscription.FromRegistration(reg.Pattern, reg.Subscription); err == nil {
			subs = append(subs, sub)
		} else {
			m.Error = err.Error()
		}
		d.Members = append(d.Members, m)
		members[id] = m
	}
	d.StrategyMismatch = strategyMismatch(d.Members)
	if d.Away, err = AwayMembers(s, group); err != nil {
		return nil, err
	}
	if d.Away == nil {
		d.Away = []Away{}
	}
	topicsOf, partitionsOf := in.Topics, in.Partitions
	if topicsOf == nil {
		topicsOf = func() ([]string, error) { return Topics(s) }
	}
	if partitionsOf == nil {
		partitionsOf = func(t string) ([]int32, error) { return Partitions(s, t) }
	}
	if len(subs) > 0 {
		topics, err := topicsOf()
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			matched := false
			for _, sub := range subs {
				if sub.Match(t) {
					matched = true
					break
				}
			}
			if !matched {
				continue
			}
			ps, err := partitionsOf(t)
			if err != nil {
				continue // deleted meanwhile
			}
			for _, p := range ps {
				parts[manager.TopicPartition{Topic: t, Partition: p}] = true
			}
		}
	}
	for tp := range parts {
		r := Row{Group: group, Topic: tp.Topic, Partition: tp.Partition, CurrentOffset: -1, LogEndOffset: -1, Lag: -1,
			ConsumerID: "-", Host: "-", ClientID: "-"}
		r.ClaimToken = in.Claims[tp.Topic][tp.Partition]
		if off, ok := in.Committed[tp.Topic][tp.Partition]; ok {
			r.CurrentOffset = off
		}
		if o, ok := owners[tp.Topic][tp.Partition]; ok && o != "" {
			r.ConsumerID = o
			if m, ok := memberOf(members, o); ok {
				r.Host, r.ClientID = m.Host, m.ClientID
			} else {
				r.Host = MemberHost(group, o, nil)
			}
		}
		if in.LogEnd != nil {
			if end, err := in.LogEnd(tp.Topic, tp.Partition); err == nil {
				r.LogEndOffset = end
			}
		}
		r.Lag = Lag(r.CurrentOffset, r.LogEndOffset)
		d.Partitions = append(d.Partitions, r)
	}
	sort.Slice(d.Partitions, func(i, j int) bool {
		a, b := d.Partitions[i], d.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return d, nil
}

// isThreadOf reports whether owner is a consumer thread id of member id
// as Kafka's old high-level consumer writes them in owner nodes:
// <id>-<n>. Pure.
func isThreadOf(owner, id string) bool {
	n, ok := strings.CutPrefix(owner, id+"-")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// memberOf finds the member an owner node names: by its id, or by one of
// its old-consumer thread ids.
func memberOf(members map[string]Member, owner string) (Member, bool) {
	if m, ok := members[owner]; ok {
		return m, true
	}
	if i := strings.LastIndexByte(owner, '-'); i > 0 {
		if m, ok := members[owner[:i]]; ok && isThreadOf(owner, m.ID) {
			return m, true
		}
	}
	return Member{}, false
}

// strategyMismatch returns what the members publishing a strategy
// disagree on, or nil when they agree (members publishing none do not
// count). The oldest is the one whose registration was created first
// (then the smallest id), as the members decide. Pure.
func strategyMismatch(members []Member) *StrategyMismatch {
	by := map[string][]string{}
	var oldest *Member
	for i := range members {
		m := &members[i]
		if m.Strategy == "" {
			continue
		}
		by[m.Strategy] = append(by[m.Strategy], m.ID)
		if oldest == nil || m.czxid < oldest.czxid || (m.czxid == oldest.czxid && m.ID < oldest.ID) {
			oldest = m
		}
	}
	if len(by) < 2 {
		return nil
	}
	for _, ids := range by {
		sort.Strings(ids)
	}
	return &StrategyMismatch{Strategies: by, Oldest: oldest.ID, InForce: oldest.Strategy}
}

// Lag is logEnd - committed when both are known (>= 0), else -1; never
// negative. Pure.
func Lag(committed, logEnd int64) int64 {
	if committed < 0 || logEnd < 0 {
		return -1
	}
	return max(logEnd-committed, 0)
}

// LogEndFunc returns a LogEnd function reading from client.
func LogEndFunc(client sarama.Client) func(string, int32) (int64, error) {
	return func(topic string, p int32) (int64, error) {
		return client.GetOffset(topic, p, sarama.OffsetNewest)
	}
}

func dash(v int64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

// Table formats rows as aligned columns under a header; pure.
func Table(header []string, rows [][]string) string {
	w := make([]int, len(header))
	for i, h := range header {
		w[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range r {
			w[i] = max(w[i], len(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i == len(cells)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", w[i]-len(c)+2))
		}
		b.WriteString("\n")
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// Text formats d like kafka-consumer-groups --describe, followed by the
// members. Pure.
func (d *Description) Text() string {
	var b strings.Builder
	if len(d.Members) == 0 {
		fmt.Fprintf(&b, "Consumer group '%s' has no active members.\n\n", d.Group)
	}
	rows := make([][]string, 0, len(d.Partitions))
	for _, r := range d.Partitions {
		rows = append(rows, []string{r.Group, r.Topic, fmt.Sprint(r.Partition), dash(r.CurrentOffset), dash(r.LogEndOffset), dash(r.Lag), r.ConsumerID, r.Host, r.ClientID})
	}
	b.WriteString(Table([]string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}, rows))
	if len(d.Members) > 0 {
		b.WriteString("\n")
		var mrows [][]string
		for _, m := range d.Members {
			sub := m.Pattern + ":" + strings.Join(m.Subscription, ",")
			if m.Error != "" {
				sub = "unreadable: " + m.Error
			}
			mrows = append(mrows, []string{m.ID, orDash(m.Host), orDash(m.ClientID), sub, orDash(m.Strategy), fmt.Sprint(m.Partitions)})
		}
		b.WriteString(Table([]string{"MEMBER", "HOST", "CLIENT-ID", "SUBSCRIPTION", "STRATEGY", "PARTITIONS"}, mrows))
	}
	if len(d.Away) > 0 {
		b.WriteString("\nMembers away: stopped, their partitions kept unowned for their restart until they register again or their grace ends (MARKER-WRITTEN: when each last registered, not when it stopped, which ZooKeeper does not record):\n")
		var arows [][]string
		for _, a := range d.Away {
			grace, written := orDash(a.Grace), "-"
			if a.Error != "" {
				grace = "unreadable: " + a.Error
			}
			if !a.MarkerWritten.IsZero() {
				written = a.MarkerWritten.Format(time.RFC3339)
			}
			arows = append(arows, []string{a.ID, orDash(a.Host), orDash(a.ClientID), grace, written})
		}
		b.WriteString(Table([]string{"MEMBER", "HOST", "CLIENT-ID", "GRACE", "MARKER-WRITTEN"}, arows))
		b.WriteString("(zkgroup leave --instance-id ID: a member stopped for good gives its partitions up at once)\n")
	}
	if sm := d.StrategyMismatch; sm != nil {
		names := make([]string, 0, len(sm.Strategies))
		for n := range sm.Strategies {
			names = append(names, n)
		}
		sort.Strings(names)
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%q by %s", n, strings.Join(sm.Strategies[n], ", ")))
		}
		fmt.Fprintf(&b, "\nSTRATEGY MISMATCH: the members publish different assignment strategies (%s); they compute with %q, the strategy of the oldest member %s, and a member that does not know it claims nothing. Configure every member with one strategy.\n",
			strings.Join(parts, "; "), sm.InForce, sm.Oldest)
	}
	if d.OffsetStorageNote != "" {
		fmt.Fprintf(&b, "\n(offsets from %s storage: %s; --offset-storage picks one)\n", d.OffsetStorage, d.OffsetStorageNote)
	} else {
		fmt.Fprintf(&b, "\n(offsets from %s storage)\n", d.OffsetStorage)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
