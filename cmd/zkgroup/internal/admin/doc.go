// Package admin is the daemon's HTTP admin server: /healthz (the process
// is up and its ZooKeeper session healthy), /readyz (every assigned
// partition is fetching), /metrics (Prometheus text, from a registry of
// its own, collected from Consumer.Stats on every scrape) and /status
// (JSON: instance, group, members, assignment, per-partition offsets and
// lag).
package admin
