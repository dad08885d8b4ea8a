package admin

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// Readiness decides /readyz: ready when the member joined, its ZooKeeper
// session is healthy, no member of the group publishes another assignment
// strategy nor, publishing none (Kafka's old high-level consumer), would
// compute another assignment, every assigned partition is fetching and none is
// suspended, and (when the group view is known) its subscription matches
// at least one topic. reason says why not, or what it serves. view is nil
// when unknown. Pure.
func Readiness(st manager.Stats, joined bool, view *GroupView) (ready bool, reason string) {
	if !joined {
		return false, "joining the group"
	}
	if !st.SessionHealthy {
		return false, "zookeeper session unhealthy: partitions suspended, commits held back until it answers again"
	}
	if st.KafkaUnreachable {
		return false, fmt.Sprintf("out of the group since %s: %s; partitions stopped without a commit, joining again once Kafka answers",
			st.KafkaUnreachableSince.UTC().Format(time.RFC3339), st.KafkaUnreachableReason)
	}
	if len(st.StrategyConflicts) > 0 {
		return false, strategyMismatch(st.StrategyConflicts)
	}
	if len(st.IncompatibleMembers) > 0 {
		return false, incompatibleMembers(st.IncompatibleMembers)
	}
	var suspended []string
	for _, p := range st.Partitions {
		if p.Suspended {
			suspended = append(suspended, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
		}
	}
	if len(suspended) > 0 {
		return false, fmt.Sprintf("%d partitions suspended (waiting for the zookeeper session): %s", len(suspended), list(suspended))
	}
	if !st.Ready {
		fetching := map[manager.TopicPartition]bool{}
		for _, p := range st.Partitions {
			fetching[manager.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = true
		}
		var waiting []string
		for _, tp := range st.Assigned {
			if !fetching[tp] {
				waiting = append(waiting, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
			}
		}
		if len(waiting) == 0 {
			return false, fmt.Sprintf("rebalancing: %d partitions assigned, releasing partitions no longer assigned", len(st.Assigned))
		}
		return false, fmt.Sprintf("rebalancing: %d of %d assigned partitions not fetching yet: %s", len(waiting), len(st.Assigned), list(waiting))
	}
	if len(st.Assigned) == 0 && view != nil && len(view.Topics) == 0 {
		return false, fmt.Sprintf("subscription matches no topic (%s): nothing to consume until a matching topic is created", view.Subscription)
	}
	if len(st.Assigned) == 0 {
		return true, fmt.Sprintf("ready: no partition assigned (%d members share the partitions)", len(st.Members))
	}
	return true, fmt.Sprintf("ready: %d partitions fetching", len(st.Partitions))
}

// strategyMismatch says why a member is not ready while members publish
// other strategies: every member and strategy, and what the group
// computes with. cs is not empty. Pure.
func strategyMismatch(cs []manager.StrategyMismatchError) string {
	c := cs[0]
	peers := make([]string, 0, len(cs))
	for _, x := range cs {
		peers = append(peers, fmt.Sprintf("%s publishes %q", x.Peer, x.PeerStrategy))
	}
	what := fmt.Sprintf("every member computes with %q, the strategy of the oldest member %s", c.InForce, c.Oldest)
	if c.InForce == "" {
		what = fmt.Sprintf("this member claims nothing: the strategy of the oldest member %s is unknown here", c.Oldest)
	}
	return fmt.Sprintf("strategy mismatch: this member %s is configured with %q, %s; %s; configure every member with one strategy",
		c.Member, c.Strategy, list(peers), what)
}

// incompatibleMembers says why a member is not ready while members
// publishing no strategy (Kafka's old high-level consumer) would compute
// another assignment. es is not empty. Pure.
func incompatibleMembers(es []manager.IncompatibleMemberError) string {
	peers := make([]string, 0, len(es))
	for _, e := range es {
		peers = append(peers, e.Peer)
	}
	e := es[0]
	return fmt.Sprintf("incompatible member: %s publish no strategy (Kafka's old high-level consumer?) and would not agree with %q on %d partitions: %s",
		list(peers), e.Strategy, e.Differ, e.Reason)
}

// list joins up to 5 names, then says how many more.
func list(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
}

// healthz answers 200 while the process serves and its loops turn.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Liveness != nil {
		if err := s.cfg.Liveness.Check(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	_, joined := s.stats()
	if !joined {
		if why := s.waitingReason(); why != "" {
			writeText(w, http.StatusOK, "alive: "+why)
			return
		}
		writeText(w, http.StatusOK, "alive: joining the group")
		return
	}
	writeText(w, http.StatusOK, "alive")
}

// readyz answers 200 when Readiness says ready, else 503 with the reason.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	ready, reason := s.readiness()
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	writeText(w, code, reason)
}

// readiness applies Readiness to the current stats and group view.
func (s *Server) readiness() (bool, string) {
	st, joined := s.stats()
	var view *GroupView
	var at time.Time
	if s.cfg.View != nil {
		v, readAt, _ := s.cfg.View.Last()
		view, at = &v, readAt
	}
	return s.readinessOf(st, joined, view, at)
}

// readinessOf applies Readiness to st and to view (nil: none) when it
// was read within three of the Viewer's intervals.
func (s *Server) readinessOf(st manager.Stats, joined bool, view *GroupView, readAt time.Time) (bool, string) {
	if why := s.waitingReason(); !joined && why != "" {
		return false, why
	}
	if view != nil && !s.cfg.View.fresh(readAt) {
		view = nil
	}
	return Readiness(st, joined, view)
}
