// Package admin is the daemon's HTTP admin server:
//
//   - /healthz: liveness. 200 while the process serves and its loops turn
//     (Liveness); the ZooKeeper session plays no part, so that a slow
//     ZooKeeper does not get healthy members restarted.
//   - /readyz: readiness. 200 when the session is healthy, every assigned
//     partition is fetching and none is suspended, and the subscription
//     matches a topic; else 503 with the reason (Readiness).
//   - /metrics: Prometheus text from a registry of its own, collected from
//     Consumer.Stats, the group view and the sink at every scrape
//     (docs/metrics.md lists every metric).
//   - /status: JSON (Status) of this member, its partitions, its recent
//     rebalances, the lag history and the whole group as ZooKeeper shows
//     it (GroupView, read by a Viewer).
//   - /: the live group page, one embedded HTML file polling /status.
//   - /loglevel (GET, PUT) and /debug/pprof/, only when configured.
//
// Everything but /healthz and /readyz can require a token, and the server
// can serve HTTPS only. Prometheus stays in cmd/: the library packages
// know nothing of it.
package admin
