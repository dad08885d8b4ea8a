// Command zkcluster starts and stops a local Apache Kafka cluster (ZooKeeper
// mode) and its ZooKeeper on loopback, for trying zkgroup and for the demo.
//
//	zkcluster fetch                      fetch the jars from Maven Central (cached)
//	zkcluster up [-brokers N] [-zookeepers N] [-kafka 3|4] [-dir D]
//	                                     start detached, print the addresses;
//	                                     -zookeepers 3: a ZooKeeper ensemble;
//	                                     -kafka 4: Kafka 4 in KRaft mode and a
//	                                     ZooKeeper of zkgroup's own
//	zkcluster status [-json] [-dir D]    print the addresses of a running cluster
//	zkcluster down [-dir D]              stop it; no java process is left
//	zkcluster topic -name T [-partitions P] [-replication R] [-dir D]
//	zkcluster produce -topic T [-partitions P] [-n N] [-from I] [-dir D]
//
// TestUsageListsEveryFlag keeps this list and usageText in step with the
// flags each command defines.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "fetch":
		err = fetch()
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "status":
		err = status(os.Args[2:])
	case "topic":
		err = topic(os.Args[2:])
	case "produce":
		err = produce(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkcluster:", err)
		os.Exit(1)
	}
}

// usageText lists the commands with every flag they define.
const usageText = `usage: zkcluster <command> [flags]

  fetch                                  fetch the jars (cached)
  up [-brokers N] [-zookeepers N] [-kafka 3|4] [-dir D]
                                         start detached, print the addresses
  status [-json] [-dir D]                print the addresses of a running cluster
  down [-dir D]                          stop it
  topic -name T [-partitions P] [-replication R] [-dir D]
                                         create a topic
  produce -topic T [-partitions P] [-n N] [-from I] [-dir D]
                                         write N messages

"zkcluster <command> -h" says what each flag means.`

func usage() {
	fmt.Fprintln(os.Stderr, usageText)
	os.Exit(2)
}

func defaultDir() string {
	if d := os.Getenv("ZKGROUP_CLUSTER_DIR"); d != "" {
		return d
	}
	return ".cluster"
}

// fetch caches the jars of the Kafka lines the tests run: 3.9 with
// ZooKeeper, 4, and 0.11's old high-level consumer.
func fetch() error {
	r, err := testcluster.Fetch()
	if err != nil {
		return err
	}
	fmt.Printf("Kafka %s, ZooKeeper %s: %s in %v (%s)\n", testcluster.KafkaVersion,
		testcluster.ZooKeeperVersion(r.LibDir), how(r), r.Duration.Round(time.Millisecond), r.LibDir)
	r4, err := testcluster.FetchKafka4()
	if err != nil {
		return err
	}
	fmt.Printf("Kafka %s (KRaft): %s in %v (%s)\n", testcluster.Kafka4Version, how(r4), r4.Duration.Round(time.Millisecond), r4.LibDir)
	r011, err := testcluster.FetchKafka011()
	if err != nil {
		return err
	}
	fmt.Printf("Kafka %s (old high-level consumer): %s in %v (%s)\n", testcluster.Kafka011Version, how(r011),
		r011.Duration.Round(time.Millisecond), r011.LibDir)
	return nil
}

func how(r testcluster.FetchResult) string {
	if r.Cached {
		return "already cached"
	}
	return "fetched with mvn"
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	brokers := fs.Int("brokers", 3, "number of Kafka brokers (1 to 3)")
	zookeepers := fs.Int("zookeepers", envInt("ZOOKEEPERS", 1), "number of ZooKeeper servers: 1, or an ensemble of 3 or 5 (env ZOOKEEPERS)")
	kafka := fs.String("kafka", envOr("KAFKA", "3"), "Kafka line: 3 (3.9, ZooKeeper mode) or 4 (4.x, KRaft mode with a ZooKeeper for zkgroup alone) (env KAFKA)")
	dir := fs.String("dir", defaultDir(), "cluster folder (configs, logs, data, state)")
	_ = fs.Parse(args)
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if s, err := testcluster.ReadState(abs); err == nil {
		return fmt.Errorf("a cluster already runs in %s (ZooKeeper %s); run zkcluster down first", abs, s.ZooKeeperConnect)
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := []testcluster.Option{testcluster.Brokers(*brokers), testcluster.ZooKeepers(*zookeepers), testcluster.Dir(abs), testcluster.Detach()}
	switch *kafka {
	case "3", "3.9":
	case "4":
		opts = append(opts, testcluster.KRaft(), testcluster.Chroot("/zkgroup"))
	default:
		return fmt.Errorf("up: -kafka %q: want 3 or 4", *kafka)
	}
	c, err := testcluster.Launch(ctx, opts...)
	if err != nil {
		return err
	}
	for _, n := range c.Notes() {
		fmt.Fprintln(os.Stderr, "note:", n)
	}
	if err := c.WriteState(); err != nil {
		_ = c.Close()
		return err
	}
	s := c.State()
	mode := "ZooKeeper mode"
	if s.KRaft {
		mode = "KRaft mode; ZooKeeper for zkgroup only: give zkgroup the brokers"
	}
	zookeeper := "ZooKeeper " + s.ZooKeeperVersion
	if *zookeepers > 1 {
		zookeeper = fmt.Sprintf("an ensemble of %d ZooKeeper %s servers", *zookeepers, s.ZooKeeperVersion)
	}
	fmt.Printf("Kafka %s (%s) with %d broker(s) and %s, up in %v\n",
		s.KafkaVersion, mode, *brokers, zookeeper, time.Since(start).Round(time.Millisecond))
	printState(s)
	fmt.Printf("stop it with: zkcluster down -dir %s   (or make cluster-down)\n", abs)
	return nil
}

func printState(s testcluster.State) {
	fmt.Printf("  zookeeper (for zkgroup --zookeeper): %s\n", s.ZooKeeperConnect)
	fmt.Printf("  zookeeper (no chroot):               %s\n", s.ZooKeeper)
	fmt.Printf("  kafka brokers:                       %v\n", s.Brokers)
	fmt.Printf("  folder (logs, data):                 %s\n", s.Dir)
}

func status(args []string) error {
	fs, dir := flags("status")
	asJSON := fs.Bool("json", false, "print the state as JSON")
	_ = fs.Parse(args)
	s, err := testcluster.ReadState(*dir)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(s)
	}
	printState(s)
	return nil
}

func down(args []string) error {
	fs, dir := flags("down")
	_ = fs.Parse(args)
	if _, err := os.Stat(filepath.Join(*dir, testcluster.StateFile)); errors.Is(err, os.ErrNotExist) {
		fmt.Println("no cluster running in", *dir)
		return nil
	}
	if err := testcluster.StopDetached(*dir); err != nil {
		return err
	}
	fmt.Println("cluster stopped; no java process left")
	return nil
}

// flags starts the flags of subcommand cmd with -dir, the cluster folder.
func flags(cmd string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	return fs, fs.String("dir", defaultDir(), "cluster folder")
}

// attachFor attaches to the cluster in dir for subcommand cmd, whose flag
// -<flagName> names the topic and is required.
func attachFor(cmd, flagName, topic, dir string) (*testcluster.Cluster, error) {
	if topic == "" {
		return nil, fmt.Errorf("%s: -%s is required", cmd, flagName)
	}
	return attach(dir)
}

// attach rebuilds enough of a Cluster from a state file to create topics and produce.
func attach(dir string) (*testcluster.Cluster, error) {
	s, err := testcluster.ReadState(dir)
	if err != nil {
		return nil, err
	}
	return testcluster.Attach(s), nil
}

func topic(args []string) error {
	fs, dir := flags("topic")
	name := fs.String("name", "", "topic name")
	parts := fs.Int("partitions", 8, "partitions")
	rf := fs.Int("replication", 1, "replication factor")
	_ = fs.Parse(args)
	c, err := attachFor("topic", "name", *name, *dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateTopic(ctx, *name, int32(*parts), int16(*rf)); err != nil {
		return err
	}
	fmt.Printf("topic %s: %d partitions, replication factor %d\n", *name, *parts, *rf)
	return nil
}

func produce(args []string) error {
	fs, dir := flags("produce")
	name := fs.String("topic", "", "topic name")
	parts := fs.Int("partitions", 8, "partitions of the topic")
	n := fs.Int("n", 1000, "messages")
	from := fs.Int("from", 0, "index of the first message")
	_ = fs.Parse(args)
	c, err := attachFor("produce", "topic", *name, *dir)
	if err != nil {
		return err
	}
	p, err := c.Produce(*name, int32(*parts), *from, *n)
	if err != nil {
		return err
	}
	fmt.Printf("produced %d messages to %s: %v per partition\n", len(p.Offsets), *name, p.PerPartition)
	return nil
}
