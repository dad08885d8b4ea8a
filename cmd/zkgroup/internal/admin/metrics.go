package admin

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// collector turns Consumer.Stats, the group view and the sink counters
// into metrics at scrape time.
type collector struct {
	s *Server

	up, ready, healthy, members, assigned, owned             *prometheus.Desc
	rebalances, lastRebalance, claimWaits, restarts, dropped *prometheus.Desc
	staleAcks, totalDelivered, totalAcked, suspendedCount    *prometheus.Desc
	totalCommitErrors, totalFetchErrors, totalResets         *prometheus.Desc
	badRegistrations, squatted, malformedTopics              *prometheus.Desc
	strategyMismatch                                         *prometheus.Desc
	incompatibleMembers                                      *prometheus.Desc
	delivered, acked, committed, hwm, lag, unacked           *prometheus.Desc
	oldestUnacked, suspended, kafkaLag                       *prometheus.Desc
	commitErrors, fetchErrors, resets                        *prometheus.Desc
	subTopics, subPartitions, unowned                        *prometheus.Desc
	sinkMessages, sinkErrors, sinkRetries                    *prometheus.Desc
	sinkBatches, sinkFallbacks                               *prometheus.Desc
	info                                                     *prometheus.Desc
	fencedCommits, regressions                               *prometheus.Desc
	kafkaUnreachable, kafkaLeaves                            *prometheus.Desc

	mu sync.Mutex
	// rebalanceSeconds is fed at scrape time from Stats.History, each
	// rebalance once (by its Seq), so that none between scrapes is missed
	// as long as fewer than 64 happen between two scrapes.
	rebalanceSeconds prometheus.Histogram
	lastSeq          uint64
	totals           partitionTotals
}

func newCollector(s *Server) *collector {
	g := prometheus.Labels{"group": s.cfg.Group}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("zkgroup_"+name, help, labels, g)
	}
	tp := []string{"topic", "partition"}
	return &collector{
		s:                   s,
		up:                  d("joined", "1 once the instance joined the group."),
		ready:               d("ready", "1 while registered and every assigned partition is fetching."),
		healthy:             d("session_healthy", "1 while the ZooKeeper session is healthy."),
		members:             d("members", "Members of the group as of the last rebalance."),
		assigned:            d("assigned_partitions", "Partitions assigned to this instance."),
		owned:               d("owned_partitions", "Partitions this instance owns and fetches."),
		suspendedCount:      d("suspended_partitions", "Owned partitions suspended: handing out nothing and committing nothing until the ZooKeeper session answers again."),
		rebalances:          d("rebalances_total", "Assignments computed by this instance, by what triggered them (membership, partitions, session, start, claim-wait, assignment, unowned, kafka).", "cause"),
		lastRebalance:       d("last_rebalance_duration_seconds", "From the first change noticed to every assigned partition fetching, for the last rebalance that moved partitions of this instance."),
		claimWaits:          d("claim_waits_total", "Times a partition claim waited for the previous owner."),
		kafkaUnreachable:    d("kafka_unreachable", "1 while the instance is out of the group because no Kafka broker, or not its group coordinator, answered for kafka_unreachable_timeout; it joins again once Kafka answers."),
		kafkaLeaves:         d("kafka_unreachable_leaves_total", "Times the instance left the group because Kafka did not answer for kafka_unreachable_timeout."),
		restarts:            d("partition_restarts_total", "Partitions that stopped without being revoked (lost claims, fetch failures)."),
		dropped:             d("dropped_errors_total", "Errors dropped because the errors channel was full."),
		staleAcks:           d("stale_acks_total", "Acks of messages of partitions no longer owned."),
		totalDelivered:      d("consumer_messages_consumed_total", "Messages handed out by this instance over all its partitions and ownerships."),
		totalAcked:          d("consumer_messages_acked_total", "Messages acked on this instance over all its partitions and ownerships."),
		totalCommitErrors:   d("consumer_commit_errors_total", "Failed offset commits on this instance over all its partitions and ownerships (exact, unlike the per-partition series)."),
		totalFetchErrors:    d("consumer_fetch_errors_total", "Failed fetches on this instance over all its partitions and ownerships."),
		totalResets:         d("consumer_offset_resets_total", "Offsets reset by policy (out of range) on this instance over all its partitions and ownerships."),
		badRegistrations:    d("bad_registrations", "Members of the group whose registration could not be read at the last rebalance (given no partitions)."),
		malformedTopics:     d("malformed_topics_total", "Topic nodes skipped as malformed (each also reported on the error log)."),
		squatted:            d("squatted_partitions", "Partitions this instance should own that an id which is not a member of the group holds."),
		incompatibleMembers: d("incompatible_members", "Members of the group that publish no assignment strategy (Kafka's old high-level consumer) and would compute another assignment than this instance at the last rebalance (each also reported on the error log): their claims and this group's wait on each other."),
		strategyMismatch:    d("strategy_mismatches", "Members of the group that publish another assignment strategy than this instance's at the last rebalance (each also reported on the error log); meanwhile every member computes with the oldest member's strategy."),
		delivered:           d("messages_consumed_total", "Messages handed out by the partition's current owner (resets on a new ownership).", tp...),
		acked:               d("messages_acked_total", "Messages acked on the partition's current ownership (resets on a new ownership).", tp...),
		committed:           d("committed_offset", "Last committed offset (the next to read).", tp...),
		hwm:                 d("high_watermark", "Log-end offset of the partition as last fetched.", tp...),
		lag:                 d("lag", "High watermark minus the committed offset.", tp...),
		unacked:             d("unacked_messages", "Messages handed out and not yet acked.", tp...),
		oldestUnacked:       d("oldest_unacked_age_seconds", "Age of the oldest message handed out and not yet acked (0 when none).", tp...),
		suspended:           d("partition_suspended", "1 while the partition is suspended (the ZooKeeper session is unhealthy): nothing handed out, commits held back.", tp...),
		commitErrors:        d("commit_errors_total", "Failed offset commits, over this instance's ownerships of the partition.", tp...),
		fetchErrors:         d("fetch_errors_total", "Failed fetches, over this instance's ownerships of the partition.", tp...),
		resets:              d("offset_resets_total", "Times the fetch offset was out of range and reset to partition.initial, over this instance's ownerships of the partition.", tp...),
		subTopics:           d("subscription_topics", "Topics the subscription matches, as ZooKeeper shows them (absent while the group view is stale)."),
		subPartitions:       d("subscription_partitions", "Partitions of the topics the subscription matches (absent while the group view is stale)."),
		unowned:             d("unowned_partitions", "Partitions the subscription matches that have no owner node in the group (absent while the group view is stale)."),
		kafkaLag: prometheus.NewDesc("zkgroup_consumergroup_lag",
			"Lag per partition with kafka_exporter's labels (consumergroup, topic, partition), exported by the partition's owner.",
			tp, prometheus.Labels{"consumergroup": s.cfg.Group}),
		sinkMessages:  d("sink_messages_total", "Messages by how the sink handled them.", "outcome"),
		sinkErrors:    d("sink_errors_total", "Failed sink attempts."),
		sinkRetries:   d("sink_retries_total", "Sink attempts after the first."),
		sinkBatches:   d("sink_batches_total", "Batches a batch sink took whole."),
		sinkFallbacks: d("sink_batch_fallbacks_total", "Batches that failed for good and were delivered again one message at a time, so that only a message failing alone meets on_failure."),
		info:          d("build_info", "Build information.", "version"),
		fencedCommits: d("commits_fenced_total", "Commit requests not sent, or torn down unanswered, because the ZooKeeper lease they were taken under had ended (Kafka offset storage)."),
		regressions:   d("offset_regressions_total", "Committed offsets read from Kafka that were written under an older claim than one this instance had seen commit the partition: a stale commit landed (Kafka offset storage)."),
		rebalanceSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "zkgroup_rebalance_duration_seconds",
			Help:        "Rebalances that moved partitions of this instance: from the first change noticed to every assigned partition fetching.",
			ConstLabels: g,
			Buckets:     []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		totals: partitionTotals{},
	}
}

// Describe sends every descriptor; part of prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.ready, c.healthy, c.members, c.assigned, c.owned,
		c.suspendedCount, c.rebalances, c.lastRebalance, c.claimWaits, c.restarts, c.dropped, c.staleAcks,
		c.totalDelivered, c.totalAcked, c.totalCommitErrors, c.totalFetchErrors, c.totalResets,
		c.badRegistrations, c.squatted, c.malformedTopics, c.strategyMismatch, c.incompatibleMembers,
		c.delivered, c.acked, c.committed, c.hwm, c.lag, c.unacked, c.oldestUnacked, c.suspended,
		c.commitErrors, c.fetchErrors, c.resets, c.kafkaLag,
		c.subTopics, c.subPartitions, c.unowned,
		c.sinkMessages, c.sinkErrors, c.sinkRetries, c.sinkBatches, c.sinkFallbacks, c.info, c.fencedCommits, c.regressions,
		c.kafkaUnreachable, c.kafkaLeaves} {
		ch <- d
	}
	c.rebalanceSeconds.Describe(ch)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collect reads Consumer.Stats, the group view and the sink counters once
// per scrape. Safe for concurrent use; does no I/O.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge(c.info, 1, c.s.cfg.Version)
	if c.s.cfg.SinkStats != nil {
		ss := c.s.cfg.SinkStats()
		counter(c.sinkMessages, float64(ss.Delivered), "delivered")
		counter(c.sinkMessages, float64(ss.Skipped), "skipped")
		counter(c.sinkMessages, float64(ss.DeadLettered), "dead_lettered")
		counter(c.sinkMessages, float64(ss.Failed), "failed")
		counter(c.sinkErrors, float64(ss.Errors))
		counter(c.sinkRetries, float64(ss.Retries))
		counter(c.sinkBatches, float64(ss.Batches))
		counter(c.sinkFallbacks, float64(ss.BatchFallbacks))
	}
	st, ok := c.s.stats()
	if c.s.cfg.View != nil {
		if v, fresh := c.s.cfg.View.Fresh(); fresh {
			if ok {
				v = withOwn(v, st) // agrees with owned_partitions
			}
			gauge(c.subTopics, float64(len(v.Topics)))
			gauge(c.subPartitions, float64(len(v.Partitions)))
			gauge(c.unowned, float64(len(v.Unowned())))
		}
	}
	gauge(c.up, b2f(ok))
	if !ok {
		return
	}
	gauge(c.ready, b2f(st.Ready))
	gauge(c.healthy, b2f(st.SessionHealthy))
	gauge(c.members, float64(len(st.Members)))
	gauge(c.assigned, float64(len(st.Assigned)))
	gauge(c.owned, float64(len(st.Partitions)))
	for cause, n := range st.RebalancesByCause {
		counter(c.rebalances, float64(n), string(cause))
	}
	last, _ := st.LastRebalance()
	gauge(c.lastRebalance, last.Took.Seconds())
	counter(c.claimWaits, float64(st.ClaimWaits))
	counter(c.restarts, float64(st.PartitionRestarts))
	gauge(c.kafkaUnreachable, b2f(st.KafkaUnreachable))
	counter(c.kafkaLeaves, float64(st.KafkaLeaves))
	counter(c.dropped, float64(st.DroppedErrors))
	counter(c.staleAcks, float64(st.StaleAcks))
	counter(c.totalDelivered, float64(st.Delivered))
	counter(c.totalAcked, float64(st.Acked))
	counter(c.totalCommitErrors, float64(st.CommitErrors))
	counter(c.totalFetchErrors, float64(st.FetchErrors))
	counter(c.totalResets, float64(st.OffsetResets))
	gauge(c.badRegistrations, float64(st.BadRegistrations))
	gauge(c.squatted, float64(st.SquattedPartitions))
	gauge(c.strategyMismatch, float64(len(st.StrategyMismatches)))
	gauge(c.incompatibleMembers, float64(len(st.IncompatibleMembers)))
	counter(c.malformedTopics, float64(st.MalformedTopics))
	counter(c.fencedCommits, float64(st.FencedCommits))
	counter(c.regressions, float64(st.Regressions))
	nSuspended := 0
	for _, p := range st.Partitions {
		l := []string{p.Topic, strconv.FormatInt(int64(p.Partition), 10)}
		counter(c.delivered, float64(p.Delivered), l...)
		counter(c.acked, float64(p.Acks), l...)
		gauge(c.unacked, float64(p.Unacked), l...)
		gauge(c.oldestUnacked, p.OldestUnackedAge.Seconds(), l...)
		gauge(c.suspended, b2f(p.Suspended), l...)
		if p.Suspended {
			nSuspended++
		}
		if p.Committed >= 0 {
			gauge(c.committed, float64(p.Committed), l...)
		}
		if p.HighWatermark >= 0 {
			gauge(c.hwm, float64(p.HighWatermark), l...)
		}
		if p.Lag >= 0 {
			gauge(c.lag, float64(p.Lag), l...)
			gauge(c.kafkaLag, float64(p.Lag), l...)
		}
	}
	gauge(c.suspendedCount, float64(nSuspended))

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range st.History {
		if r.Seq > c.lastSeq {
			c.rebalanceSeconds.Observe(r.Took.Seconds())
			c.lastSeq = r.Seq
		}
	}
	c.rebalanceSeconds.Collect(ch)
	for _, p := range st.Partitions {
		c.totals.observe(p)
	}
	// Every partition this instance ever owned keeps its totals: a counter
	// must not vanish and come back lower.
	for tp, pt := range c.totals {
		t := pt.total
		l := []string{tp.Topic, strconv.FormatInt(int64(tp.Partition), 10)}
		counter(c.commitErrors, float64(t[commitErrors]), l...)
		counter(c.fetchErrors, float64(t[fetchErrors]), l...)
		counter(c.resets, float64(t[offsetResets]), l...)
	}
}
