// Command zkgroup runs a member of a ZooKeeper-coordinated Kafka consumer
// group as a daemon, delivering each message to a sink (stdout, a command,
// or an HTTP endpoint) and acking it only once the sink succeeded, and
// offers the operator commands around it.
//
//	zkgroup run --config FILE [--<field> value ...]   the daemon
//	zkgroup validate --config FILE [--connect] [--json]  check a config offline, exit 2 if bad;
//	        --connect: and meet ZooKeeper, the brokers and the topics as run does (exit 3 refused, 1 unreachable)
//	zkgroup describe [--config FILE | --zookeeper ZK --group G] [--json]
//	zkgroup offsets reset [--config FILE | --zookeeper ZK --group G] --topic T --to-earliest|--to-latest|
//	        --to-offset N|--to-datetime T|--shift-by N [--execute] [--json]
//	zkgroup offsets migrate [--config FILE | --zookeeper ZK --group G] --from zookeeper --to kafka [--execute] [--json]
//	zkgroup leave [--config FILE | --zookeeper ZK --group G] [--instance-id ID] [--json]
//	        a stopped static member's partitions move now, not after its restart_grace
//	zkgroup healthcheck [--url http://127.0.0.1:9779/healthz]
//	zkgroup version [--json]
//
// Exit status (TestDocExitCodes compares this list with the code):
//
//   - 0 (ok): success
//   - 1 (failure): failure at run time
//   - 2 (usage): bad configuration or usage, reported before anything is
//     written to ZooKeeper
//   - 3 (refused): a server refused the credentials or the client
//     certificate, or the server's certificate did not verify
//
// Started while ZooKeeper does not answer, run keeps trying (jittered
// backoff, a log line per attempt, and one at once when every server
// refuses the connection) with its admin server up (/readyz 503 says why)
// until ZooKeeper answers, a signal stops it (exit 0), or
// zookeeper_start_timeout passes (exit 1; 0, the default, waits forever).
//
// The operator commands read the ZooKeeper address, group, offset storage,
// brokers and the Kafka and ZooKeeper security settings from the daemon's
// config file (--config), their flags overriding it. describe shows each
// member's assignment strategy and says when members disagree (the
// daemon's /readyz then answers 503 naming them), and the members away:
// static members (instance_id, restart_grace) that stopped and whose
// partitions the group keeps for their restart. SIGTERM keeps them (a
// restart); leave, run once the member stopped, makes it leave for good.
//
// The operator commands (describe, offsets, leave) fail at once, with exit 1,
// when every ZooKeeper server refuses the connection; when ZooKeeper is
// slow to answer they say on stderr what they wait for, up to --timeout.
// Their arguments (--timeout, --topic, --to-datetime, which must not be
// before 1970) are checked before anything connects (exit 2).
//
// The daemon logs to stderr (text or JSON, log/slog). It stops cleanly on
// SIGTERM or SIGINT (drain, commit, release, deregister; with
// instance_id, the group keeps its partitions for restart_grace) within
// shutdown_timeout; a second signal exits at once with status 1. Under
// systemd (Type=notify) it sends READY=1 once every assigned partition is
// fetching, STOPPING=1 at shutdown, and watchdog pings when WatchdogSec is
// set. configs/zkgroup.yaml holds every setting with its help, allowed
// values and default (generated from internal/config; TestExampleConfig
// keeps it so).
package main
