package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkgroup/zkgroup/manager/assign"
)

// ExampleFile is where the repository keeps the annotated example that
// AnnotatedExample renders, relative to the module root.
const ExampleFile = "configs/zkgroup.yaml"

// exampleHeader opens the annotated example.
const exampleHeader = `# zkgroup daemon configuration (zkgroup run --config zkgroup.yaml).
#
# Generated from the code by
#   go test ./cmd/zkgroup/internal/config -run TestExampleConfig -update
# (cmd/zkgroup/internal/config: the help, allowed values and default of
# every setting); edit the code, not this file. Every setting is here;
# the commented-out ones need files or secrets of yours.
#
# Every key can be overridden by an environment variable ZKGROUP_<KEY>,
# nested keys joined with "_" (ZKGROUP_GROUP, ZKGROUP_PARTITION_MAX_UNACKED,
# ZKGROUP_SINK_HTTP_URL), and then by a flag with "-" (--group,
# --partition-max-unacked, --sink-http-url). Lists are comma-separated in
# variables and flags (sink.exec.command is split at spaces), maps are
# "k=v,k2=v2". Unknown keys are errors. Check a file with
#   zkgroup validate --config zkgroup.yaml
# A bad configuration exits with status 2 before anything is written to
# ZooKeeper. Durations are Go durations: 500ms, 10s, 2m.
`

// exampleKey is what the example says about one key beyond its help,
// allowed values and default.
type exampleKey struct {
	note    string // more comment lines, as written
	value   string // YAML value shown instead of the default
	comment bool   // the key is commented out: set it only when needed
}

// strategyNotes says what each strategy of assign.Names() does, for the
// example; a strategy without a note fails AnnotatedExample.
var strategyNotes = map[string]string{
	assign.NameBalanced:    "few moves: a join moves about P/N partitions, a leave only the leaver's",
	assign.NameRange:       "Kafka's RangeAssignor, balanced per topic",
	assign.NameRoundRobin:  "Kafka's RoundRobinAssignor",
	assign.NameLeaderAware: "each member reads from as few leaders as possible; most partitions move on any membership change",
	assign.NameSticky:      "rendezvous hashing: a membership change moves about P/N partitions, no owners read",
}

// exampleKeys are the example's notes and example values, by dotted path
// (sections too).
var exampleKeys = map[string]exampleKey{
	"group": {note: "Members register under /consumers/<group>/ids in ZooKeeper.", value: "orders-archiver"},
	"zookeeper": {note: `With the Kafka cluster's chroot if it has one:
"zk1:2181,zk2:2181,zk3:2181/kafka".`, value: `"127.0.0.1:2181/kafka"`},
	"subscription": {note: `  "static:orders,payments"  these topics
  "whitelist:orders\..*"    topics whose whole name matches the regex
  "blacklist:tmp-.*"        topics that do not match`, value: `"static:orders"`},
	"instance_id": {note: `New ids look like "<group>_<host>-<ms>-<uuid8>". A stable id (e.g. the
hostname of a StatefulSet pod) lets a restarted instance take its
partitions back at once instead of waiting for its old session to expire.`},
	"restart_grace": {note: `SIGTERM (a deploy, a restart) keeps this member's partitions for it:
nobody else claims them until it is back or the grace ends, so a rolling
restart moves nothing and the other members never pause. A member
stopped for good leaves its partitions unconsumed for the grace unless
it is told it left:
  zkgroup leave --config zkgroup.yaml    (after it stopped)
zkgroup describe lists the members away within their grace.`},
	"session_timeout": {note: `A crashed instance's partitions move to the others after this long (with
instance_id, after this and restart_grace).`},
	"kafka_unreachable_timeout": {note: `Counted while ZooKeeper still answers; with offset_storage kafka, the
group's coordinator must answer. The instance's partitions stop without
a commit (the next owners start from the last one, so nothing is lost),
it deregisters, and the others take its partitions over, within this
bound and one rebalance. /readyz answers 503 with the reason meanwhile.
If every instance is cut off, each stays out until it reaches Kafka
again.`},
	"offset_storage": {note: `Move between them with:
  zkgroup offsets migrate --from zookeeper --to kafka`},
	"partition.max_unacked": {note: "A partition whose sink is slow stops fetching at this bound; others go on."},
	"partition.drain_timeout": {note: `A revoked partition (rebalance, shutdown) waits this long for its
in-flight message or batch before committing what was acked.`},
	"sink": {note: `A message is acked (and its offset committed) only after its sink
succeeded. Each partition is processed in order, one message (or, for
the stdout sink, one batch: what was fetched together) at a time;
partitions are processed concurrently.`},
	"sink.type": {note: `  stdout  one JSON object per line: {"topic","partition","offset",
          "timestamp","key","value","headers"}; keys and values that are
          not valid UTF-8 are base64 with "key_encoding"/"value_encoding"
  exec    runs sink.exec.command per message or per batch
  http    POSTs each message or batch to sink.http.url`},
	"sink.exec.command": {note: `Mode message: the value is on stdin; ZKGROUP_TOPIC, ZKGROUP_PARTITION,
ZKGROUP_OFFSET, ZKGROUP_KEY, ZKGROUP_TIMESTAMP and ZKGROUP_HEADERS (JSON)
describe the message; no other ZKGROUP_ variable reaches the command.
Exit status 0 acks the message; any other is retried.`, value: `["/usr/local/bin/archive-order"]`},
	"sink.exec.mode": {note: `Mode batch: the batch's messages are on stdin as JSON lines, exactly as
the stdout sink writes them; ZKGROUP_TOPIC, ZKGROUP_PARTITION,
ZKGROUP_FIRST_OFFSET, ZKGROUP_LAST_OFFSET and ZKGROUP_COUNT describe the
batch. Exit status 0 acks the whole batch; 65 (EX_DATAERR) says a record
will never be taken: the messages then go one per process (a one-line
stdin) to find it, and on_failure decides for it alone; any other status
retries the batch.`},
	"sink.http.url": {note: `Mode message: the body is the value; X-Kafka-Topic, X-Kafka-Partition,
X-Kafka-Offset, X-Kafka-Key, X-Kafka-Timestamp, X-Kafka-Headers carry
the metadata. 2xx acks; 408, 429 and 5xx are retried; other statuses
fail at once. Logs, errors and validate show the URL with its password
and every query value as xxxxx.`},
	"sink.http.mode": {note: `Mode batch: the body is the batch's messages as JSON lines, exactly as
the stdout sink writes them (Content-Type: application/x-ndjson), with
X-Kafka-Topic, X-Kafka-Partition, X-Kafka-First-Offset,
X-Kafka-Last-Offset and X-Kafka-Count. 2xx acks the whole batch; 408,
429, 5xx and connection failures retry it (Retry-After is not read:
sink.retry's backoff applies); any other status sends its messages one
per request (a one-line body) to find the one refused, and on_failure
decides for it alone.`},
	"sink.http.headers":       {note: "Their values are redacted by zkgroup validate --json. Values with CR, LF or\nother control characters are refused."},
	"sink.retry.max_attempts": {note: "1: no retry."},
	"sink.on_failure": {note: `  stop         leave the message unacked and shut down cleanly; the
               daemon exits 1 and the message is retried on restart
  skip         log and count it (zkgroup_sink_messages_total
               {outcome="skipped"}), then ack it
  dead-letter  produce it to dead_letter_topic (with headers naming the
               source and the error), then ack it`},
	"sink.dead_letter_topic": {note: "Required with dead-letter; must not be matched by the subscription."},
	"admin.listen": {note: `Bind to 0.0.0.0:9779 in a container (the image does). 9779, not 9090:
that is Prometheus' own port.`},
	"admin.token_file":      {value: "/etc/zkgroup/admin-token", comment: true},
	"admin.tls_cert_file":   {value: "/etc/zkgroup/admin.crt", comment: true},
	"admin.tls_key_file":    {value: "/etc/zkgroup/admin.key", comment: true},
	"log.level":             {note: "Sarama's and ZooKeeper's own logs appear at debug."},
	"kafka.tls.ca_file":     {value: "/etc/zkgroup/kafka-ca.pem", comment: true},
	"kafka.tls.cert_file":   {value: "/etc/zkgroup/kafka-client.pem", comment: true},
	"kafka.tls.key_file":    {value: "/etc/zkgroup/kafka-client.key", comment: true},
	"kafka.tls.server_name": {value: "kafka.example.internal", comment: true},
	"kafka.sasl": {note: `The password is never written here: set one of password_file and
password_env. PLAIN without TLS sends it in clear text.`},
	"kafka.sasl.mechanism":     {value: SASLScramSHA512, comment: true},
	"kafka.sasl.username":      {value: "zkgroup", comment: true},
	"kafka.sasl.password_file": {value: "/etc/zkgroup/kafka-password", comment: true},
	"kafka.sasl.password_env":  {value: "KAFKA_PASSWORD", comment: true},
	"zookeeper_auth": {note: `The password is never written here: set one of password_file and
password_env.`},
	"zookeeper_auth.username":      {value: "zkgroup", comment: true},
	"zookeeper_auth.password_file": {value: "/etc/zkgroup/zookeeper-password", comment: true},
	"zookeeper_auth.password_env":  {value: "ZOOKEEPER_PASSWORD", comment: true},
	"zookeeper_tls.ca_file":        {value: "/etc/zkgroup/zookeeper-ca.pem", comment: true},
	"zookeeper_tls.cert_file":      {value: "/etc/zkgroup/zookeeper-client.pem", comment: true},
	"zookeeper_tls.key_file":       {value: "/etc/zkgroup/zookeeper-client.key", comment: true},
	"zookeeper_tls.server_name":    {value: "zookeeper.example.internal", comment: true},
	"zookeeper_max_reply": {note: `A reply over it fails with an error naming the node and its size (at
start: the daemon exits; later: logged, and the last view kept). The
topic list takes about 4 bytes + the name per topic: 512 KiB lists about
12,000 topics of 40 characters.`},
	"zookeeper_start_timeout": {note: `Meanwhile run keeps trying (jittered backoff, a log line per attempt
with the reason), /healthz answers 200 and /readyz 503 with the reason,
and SIGTERM exits 0 at once. 0 waits until ZooKeeper answers, for
instances started before ZooKeeper (containers, units). Refused
credentials or certificates exit 3 at once.`},
	"shutdown_timeout": {note: `Drain, commit, release partitions, deregister; a second signal exits 1
at once. Keep systemd's TimeoutStopSec above it.`},
}

// AnnotatedExample renders the annotated example configuration kept in
// ExampleFile: every settable key of Config in declaration order, each
// with its help, the values it accepts (for a key that takes one of a
// list) and its default, set to its default unless the example shows a
// value of its own; the keys that need files or secrets are commented
// out. Pure; does not block. It fails when a strategy of assign.Names()
// has no description.
func AnnotatedExample() ([]byte, error) {
	for _, n := range assign.Names() {
		if strategyNotes[n] == "" {
			return nil, fmt.Errorf("%w: strategy %q has no description in strategyNotes", ErrConfig, n)
		}
	}
	var b strings.Builder
	b.WriteString(exampleHeader)
	writeExample(&b, reflect.TypeFor[Config](), reflect.ValueOf(Default()).Elem(), "", 0)
	return []byte(b.String()), nil
}

func writeExample(b *strings.Builder, t reflect.Type, v reflect.Value, prefix string, depth int) {
	ind := strings.Repeat("  ", depth)
	for i, m := range members(t) {
		path := joinPath(prefix, m.key)
		ex := exampleKeys[path]
		if i > 0 || depth == 0 {
			b.WriteString("\n")
		}
		writeComment(b, ind, sentence(m.help), true)
		writeComment(b, ind, ex.note, false)
		mv := m.at(v)
		if m.typ.Kind() == reflect.Struct {
			b.WriteString(ind + m.key + ":\n")
			writeExample(b, m.typ, mv, path, depth+1)
			continue
		}
		f, _ := fieldByPath(path)
		writeComment(b, ind, allowedLine(f, mv, 76-len(ind)-2), false)
		val := ex.value
		if val == "" {
			val = yamlValue(mv)
		}
		if ex.comment {
			b.WriteString(ind + "# " + m.key + ": " + val + "\n")
		} else {
			b.WriteString(ind + m.key + ": " + val + "\n")
		}
	}
}

// allowedLine says which values the field accepts and its default, in
// lines of at most width columns.
func allowedLine(f Field, def reflect.Value, width int) string {
	d := yamlValue(def)
	switch d {
	case `""`, "[]", "{}":
		d = "none"
	}
	if len(f.Values) == 0 {
		return "Default: " + d + "."
	}
	if f.Path != "strategy" {
		return fill("One of: "+strings.Join(f.Values, ", ")+". Default: "+d+".", "", "  ", width)
	}
	var s strings.Builder
	s.WriteString("One of:\n")
	names := 0
	for _, val := range f.Values {
		names = max(names, len(val))
	}
	for _, val := range f.Values {
		s.WriteString(fill(strategyNotes[val], fmt.Sprintf("  %-*s  ", names, val), strings.Repeat(" ", names+4), width) + "\n")
	}
	s.WriteString("Default: " + d + ".")
	return s.String()
}

// writeComment writes text as comment lines at indentation ind; with
// wrap, each paragraph is filled to 76 columns (continuation lines of an
// indented line keep its indentation), else lines are kept as written.
func writeComment(b *strings.Builder, ind, text string, wrap bool) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		if !wrap {
			b.WriteString(strings.TrimRight(ind+"# "+line, " ") + "\n")
			continue
		}
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		next := ind + "# " + lead
		if lead != "" {
			next += "  "
		}
		b.WriteString(fill(line, ind+"# "+lead, next, 76) + "\n")
	}
}

// sentence capitalises help text and ends it with a period.
func sentence(s string) string {
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// plainYAML matches strings that YAML reads back as the same string
// without quotes.
var plainYAML = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._/-]*$`)

// yamlValue renders a field's value as YAML.
func yamlValue(v reflect.Value) string {
	switch {
	case isDuration(v.Type()):
		return Duration(v.Int()).String()
	case v.Kind() == reflect.String:
		s := v.String()
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
			return strconv.Quote(s)
		}
		if plainYAML.MatchString(s) {
			return s
		}
		return strconv.Quote(s)
	case v.Kind() == reflect.Slice:
		q := make([]string, v.Len())
		for i := range q {
			q[i] = strconv.Quote(v.Index(i).String())
		}
		return "[" + strings.Join(q, ", ") + "]"
	case v.Kind() == reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
		keys := v.MapKeys()
		q := make([]string, 0, len(keys))
		for _, k := range keys {
			q = append(q, strconv.Quote(k.String())+": "+strconv.Quote(v.MapIndex(k).String()))
		}
		slices.Sort(q)
		return "{" + strings.Join(q, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// fill joins the words of text into lines of at most width columns, the
// first starting with first, the others with next. Pure.
func fill(text, first, next string, width int) string {
	var out []string
	cur := first
	fresh := true
	for _, w := range strings.Fields(text) {
		if !fresh && len(cur)+1+len(w) > width {
			out = append(out, cur)
			cur, fresh = next, true
		}
		if !fresh {
			cur += " "
		}
		cur += w
		fresh = false
	}
	return strings.Join(append(out, cur), "\n")
}
