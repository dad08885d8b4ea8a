package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// KafkaVersion is the Apache Kafka release the local cluster runs. 3.9 is the
// last release line whose brokers run in ZooKeeper mode.
const KafkaVersion = "3.9.2"

// Kafka4Version is the Apache Kafka 4 release a KRaft cluster runs (see
// KRaft); its ZooKeeper, used by zkgroup alone, comes from KafkaVersion's
// jars.
const Kafka4Version = "4.3.1"

// Kafka011Version is the Kafka release whose old high-level consumer
// (ZookeeperConsumerConnector, run as kafka.tools.ConsoleConsumer) the
// mixed-group tests run beside zkgroup members: the last release line
// that ships it. Its client runs on Java 17 against KafkaVersion's brokers.
const Kafka011Version = "0.11.0.3"

// ErrNoJava reports that java or mvn is not installed.
var ErrNoJava = errors.New("testcluster: java or mvn not found")

// completeMarker is written into the cache folder once every jar is there.
const completeMarker = ".complete"

// CacheDir returns the folder that holds the Kafka and ZooKeeper jars:
// $ZKGROUP_CACHE if set, else $XDG_CACHE_HOME/zkgroup or ~/.cache/zkgroup,
// with one sub-folder per Kafka version.
func CacheDir() (string, error) { return cacheDirFor(KafkaVersion) }

func cacheDirFor(version string) (string, error) {
	base := os.Getenv("ZKGROUP_CACHE")
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("testcluster: no cache folder: set ZKGROUP_CACHE: %w", err)
		}
		base = filepath.Join(c, "zkgroup")
	}
	return filepath.Join(base, "kafka-"+version), nil
}

// pomPath finds internal/testcluster/maven/<rel> next to this source file,
// which is where it lives in the module.
func pomPath(rel string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		p := filepath.Join(filepath.Dir(file), "maven", rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p := os.Getenv("ZKGROUP_POM"); p != "" && rel == "pom.xml" {
		return p, nil
	}
	return "", fmt.Errorf("testcluster: maven/%s not found beside the sources", rel)
}

// FetchResult says where the jars are and what fetching them cost.
type FetchResult struct {
	LibDir   string        // folder of jars, for java -cp LibDir/*
	Cached   bool          // the cache was complete; mvn did not run
	Duration time.Duration // time spent, including mvn
}

// Fetch makes sure every jar the cluster needs is in the cache, running
// `mvn dependency:copy-dependencies` on internal/testcluster/maven/pom.xml when
// the cache is not complete. It is safe to call from several processes at
// once: a file lock serialises them. It blocks while mvn runs.
func Fetch() (FetchResult, error) {
	return fetch(KafkaVersion, "pom.xml", []string{"kafka_2.13-" + KafkaVersion + ".jar", "kafka-tools-" + KafkaVersion + ".jar"}, true)
}

// FetchKafka4 is Fetch for Kafka4Version's jars (maven/kafka4/pom.xml),
// in a cache folder of their own.
func FetchKafka4() (FetchResult, error) {
	return fetch(Kafka4Version, "kafka4/pom.xml", []string{"kafka_2.13-" + Kafka4Version + ".jar", "kafka-tools-" + Kafka4Version + ".jar"}, false)
}

// FetchKafka011 is Fetch for Kafka011Version's core jar and its runtime
// dependencies (maven/kafka011/pom.xml: zkclient, ZooKeeper 3.4, Scala
// 2.11, ...), in a cache folder of their own.
func FetchKafka011() (FetchResult, error) {
	return fetch(Kafka011Version, "kafka011/pom.xml",
		[]string{"kafka_2.11-" + Kafka011Version + ".jar", "kafka-clients-" + Kafka011Version + ".jar", "zkclient-0.10.jar"}, true)
}

func fetch(version, pomRel string, want []string, withZooKeeper bool) (FetchResult, error) {
	start := time.Now()
	if _, err := exec.LookPath("java"); err != nil {
		return FetchResult{}, fmt.Errorf("%w: java: %v", ErrNoJava, err)
	}
	dir, err := cacheDirFor(version)
	if err != nil {
		return FetchResult{}, err
	}
	lib := filepath.Join(dir, "lib")
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil {
		return FetchResult{LibDir: lib, Cached: true, Duration: time.Since(start)}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: cache lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: cache lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	// Another process may have completed the cache while we waited.
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil {
		return FetchResult{LibDir: lib, Cached: true, Duration: time.Since(start)}, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return FetchResult{}, fmt.Errorf("%w: mvn: %v", ErrNoJava, err)
	}
	pom, err := pomPath(pomRel)
	if err != nil {
		return FetchResult{}, err
	}
	tmp := lib + ".tmp"
	_ = os.RemoveAll(tmp)
	cmd := exec.Command("mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: mvn dependency:copy-dependencies for Kafka %s: %w\n%s", version, err, out.String())
	}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(tmp, w)); err != nil {
			return FetchResult{}, fmt.Errorf("testcluster: mvn did not bring %s: %w", w, err)
		}
	}
	if zk, _ := filepath.Glob(filepath.Join(tmp, "zookeeper-3.*.jar")); withZooKeeper && len(zk) == 0 {
		return FetchResult{}, errors.New("testcluster: mvn did not bring a zookeeper-3.x jar")
	}
	_ = os.RemoveAll(lib)
	if err := os.Rename(tmp, lib); err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: cache: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, completeMarker), []byte(version+"\n"), 0o644); err != nil {
		return FetchResult{}, fmt.Errorf("testcluster: cache: %w", err)
	}
	return FetchResult{LibDir: lib, Duration: time.Since(start)}, nil
}

// ZooKeeperVersion returns the version of the ZooKeeper jar in lib, e.g. "3.8.4".
func ZooKeeperVersion(lib string) string {
	zk, _ := filepath.Glob(filepath.Join(lib, "zookeeper-3.*.jar"))
	for _, j := range zk {
		b := filepath.Base(j)
		v := b[len("zookeeper-") : len(b)-len(".jar")]
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			return v
		}
	}
	return "unknown"
}
