#!/usr/bin/env bash
# demo.sh (make demo): three zkgroup daemons share an 8-partition topic on a
# local 3-broker Kafka cluster; one is stopped with SIGTERM and told to
# leave for good (zkgroup leave), and its partitions move to the others;
# every message is printed exactly once.
# Everything started here is torn down on exit, also on failure or Ctrl-C.
#
# KAFKA=3 (default): Kafka 3.9 in ZooKeeper mode; zkgroup finds the brokers
# in ZooKeeper. KAFKA=4 (make demo KAFKA=4, or make demo-kafka4): Kafka 4
# in KRaft mode beside a ZooKeeper that only zkgroup uses; the brokers are
# given to every zkgroup command with --brokers.
set -euo pipefail

cd "$(dirname "$0")/.."
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkgroup-demo.XXXXXX")
CLUSTER="$WORK/cluster"
BIN="$WORK/zkgroup"
TOPIC=demo-events
GROUP=demo-group
PARTITIONS=8
BATCH=800
KAFKA=${KAFKA:-3}
case "$KAFKA" in 3 | 4) ;; *) echo "demo: KAFKA=$KAFKA: want 3 or 4" >&2; exit 2 ;; esac
BROKER_ARGS=()
declare -A PIDS=()
OK=0

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf '\033[31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

cleanup() {
	local rc=$?
	set +e
	# A closed stdout (demo | head) must not stop the teardown half-way.
	trap '' PIPE
	for name in "${!PIDS[@]}"; do
		kill -TERM "${PIDS[$name]}" 2>/dev/null
	done
	for name in "${!PIDS[@]}"; do
		wait "${PIDS[$name]}" 2>/dev/null
	done
	if [ -f "$CLUSTER/cluster.json" ]; then
		step "tearing down the cluster"
		go run ./internal/testcluster/cmd/zkcluster down -dir "$CLUSTER" | sed 's/^/    /'
	fi
	if [ "$OK" = 1 ]; then
		rm -rf "$WORK"
	else
		printf '\nlogs kept in %s (log-*.txt, out-*.jsonl)\n' "$WORK" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# zk runs an operator command; BROKER_ARGS gives the brokers on Kafka 4.
zk() { "$BIN" "$@" "${BROKER_ARGS[@]}"; }

# owned prints "instance partition-count" from zkgroup describe.
owners() {
	zk describe --zookeeper "$ZK" --group "$GROUP" |
		awk -v t="$TOPIC" '$2 == t && $7 != "-" { n[$7]++ } END { for (o in n) printf "%s %d\n", o, n[o] }' | sort
}

owned_total() { owners | awk '{ s += $2 } END { print s + 0 }'; }

lines() { cat "$WORK"/out-*.jsonl 2>/dev/null | wc -l | tr -d ' '; }

# Conditions for wait_for (evaluated again on every poll).
all_owned() { test "$(owned_total)" = "$PARTITIONS"; }
printed() { test "$(lines)" -ge "$1"; }
b_released() {
	test "$(zk describe --zookeeper "$ZK" --group "$GROUP" |
		awk -v t="$TOPIC" '$2 == t && $7 != "-" && $7 != "demo-b"' | wc -l | tr -d ' ')" = "$PARTITIONS"
}

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
	local what=$1 secs=$2; shift 2
	local deadline=$((SECONDS + secs))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || die "timed out after ${secs}s waiting for $what"
		sleep 0.5
	done
}

start_instance() {
	local name=$1
	"$BIN" run --group "$GROUP" --zookeeper "$ZK" --subscription "static:$TOPIC" "${BROKER_ARGS[@]}" \
		--instance-id "demo-$name" --admin-listen "" --session-timeout 6s \
		--partition-commit-interval 200ms --partition-drain-timeout 5s --shutdown-timeout 20s \
		>>"$WORK/out-$name.jsonl" 2>"$WORK/log-$name.txt" &
	PIDS[$name]=$!
	info "instance demo-$name: pid ${PIDS[$name]}, messages -> out-$name.jsonl"
}

# stop_instance stops demo-<name> with SIGTERM and fails unless it exits 0.
stop_instance() {
	local name=$1 rc=0
	kill -TERM "${PIDS[$name]}"
	wait "${PIDS[$name]}" || rc=$?
	unset "PIDS[$name]"
	[ "$rc" = 0 ] || die "demo-$name exited with status $rc (see $WORK/log-$name.txt)"
}

step "building zkgroup"
go build -o "$BIN" ./cmd/zkgroup
info "$("$BIN" version)"

if [ "$KAFKA" = 4 ]; then
	step "starting a local Kafka 4 cluster (3 KRaft nodes) and a ZooKeeper for zkgroup in $CLUSTER"
else
	step "starting a local Kafka cluster (3 brokers, ZooKeeper) in $CLUSTER"
fi
go run ./internal/testcluster/cmd/zkcluster up -dir "$CLUSTER" -brokers 3 -kafka "$KAFKA" | sed 's/^/    /'
STATE=$(go run ./internal/testcluster/cmd/zkcluster status -dir "$CLUSTER" -json)
ZK=$(printf '%s' "$STATE" | sed -n 's/.*"zookeeper_connect": *"\([^"]*\)".*/\1/p')
[ -n "$ZK" ] || die "could not read the ZooKeeper address"
info "zookeeper: $ZK"
if [ "$KAFKA" = 4 ]; then
	BROKERS=$(printf '%s' "$STATE" | sed -n 's/.*"brokers": *\[\([^]]*\)\].*/\1/p' | tr -d '" ')
	[ -n "$BROKERS" ] || die "could not read the broker addresses"
	BROKER_ARGS=(--brokers "$BROKERS")
	info "brokers (given to zkgroup: KRaft brokers register nothing in ZooKeeper): $BROKERS"
fi

step "creating topic $TOPIC with $PARTITIONS partitions and producing $BATCH messages"
go run ./internal/testcluster/cmd/zkcluster topic -dir "$CLUSTER" -name "$TOPIC" -partitions "$PARTITIONS" -replication 3 | sed 's/^/    /'
go run ./internal/testcluster/cmd/zkcluster produce -dir "$CLUSTER" -topic "$TOPIC" -partitions "$PARTITIONS" -n "$BATCH" -from 0 >/dev/null
info "produced messages 0..$((BATCH - 1))"

step "starting three zkgroup instances (stdout sink)"
for name in a b c; do start_instance "$name"; done
wait_for "all $PARTITIONS partitions owned" 60 all_owned
wait_for "the first $BATCH messages" 60 printed "$BATCH"

step "partitions per instance (zkgroup describe)"
zk describe --zookeeper "$ZK" --group "$GROUP" | sed 's/^/    /'

step "producing $BATCH more messages, then stopping demo-b with SIGTERM"
go run ./internal/testcluster/cmd/zkcluster produce -dir "$CLUSTER" -topic "$TOPIC" -partitions "$PARTITIONS" -n "$BATCH" -from "$BATCH" >/dev/null
stop_instance b
info "demo-b drained, committed and exited 0; the group keeps its partitions for its restart (restart_grace)"
"$BIN" leave --zookeeper "$ZK" --group "$GROUP" --instance-id demo-b | sed 's/^/    /'
info "zkgroup leave: demo-b is not coming back, so its partitions move now"
wait_for "demo-a and demo-c to own all $PARTITIONS partitions" 60 b_released

step "partitions after demo-b left"
owners | while read -r o n; do info "$o owns $n partition(s)"; done
zk describe --zookeeper "$ZK" --group "$GROUP" | sed 's/^/    /'

step "producing a last $BATCH messages to the two remaining instances"
go run ./internal/testcluster/cmd/zkcluster produce -dir "$CLUSTER" -topic "$TOPIC" -partitions "$PARTITIONS" -n "$BATCH" -from $((2 * BATCH)) >/dev/null
TOTAL=$((3 * BATCH))
wait_for "all $TOTAL messages printed" 60 printed "$TOTAL"

step "stopping demo-a and demo-c"
for name in a c; do
	stop_instance "$name"
	info "demo-$name exited 0"
done

step "checking that every message was printed exactly once"
for name in a b c; do info "out-$name.jsonl: $(wc -l <"$WORK/out-$name.jsonl" | tr -d ' ') messages"; done
values=$(cat "$WORK"/out-*.jsonl | grep -o '"value":"[^"]*"' | sort)
dups=$(printf '%s\n' "$values" | uniq -d | wc -l | tr -d ' ')
unique=$(printf '%s\n' "$values" | uniq | wc -l | tr -d ' ')
missing=0
for ((i = 0; i < TOTAL; i++)); do
	printf '"value":"%s-v-%d"\n' "$TOPIC" "$i"
done | sort >"$WORK/expected.txt"
missing=$(printf '%s\n' "$values" | uniq | comm -13 - "$WORK/expected.txt" | wc -l | tr -d ' ')
info "$unique distinct values, $dups duplicated, $missing missing (expected $TOTAL distinct)"
[ "$dups" = 0 ] || die "$dups message(s) printed more than once"
[ "$missing" = 0 ] || die "$missing message(s) never printed"
[ "$unique" = "$TOTAL" ] || die "$unique distinct messages, want $TOTAL"

OK=1
step "demo passed (Kafka $KAFKA): $TOTAL messages, each printed exactly once across three instances"
