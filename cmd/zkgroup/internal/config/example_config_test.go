package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
)

var update = flag.Bool("update", false, "rewrite configs/zkgroup.yaml from the code")

// exampleFile is ExampleFile from this package's folder.
var exampleFile = filepath.Join("..", "..", "..", "..", ExampleFile)

// TestExampleConfig fails when configs/zkgroup.yaml is not what
// AnnotatedExample renders from the code; -update rewrites it. It also
// checks the rendered example on its own terms: it loads and validates,
// every field is there (set, or commented out), each set key holds the
// code's default unless the example gives it a value of its own, and
// every allowed value of a field is listed.
func TestExampleConfig(t *testing.T) {
	want, err := AnnotatedExample()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		if *update {
			if err := os.WriteFile(exampleFile, want, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", exampleFile)
		} else {
			g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
			for i := 0; i < len(g) || i < len(w); i++ {
				var gl, wl string
				if i < len(g) {
					gl = g[i]
				}
				if i < len(w) {
					wl = w[i]
				}
				if gl != wl {
					t.Errorf("%s differs from the code from line %d:\n file: %q\n code: %q", ExampleFile, i+1, gl, wl)
					break
				}
			}
			t.Log("run: go test ./cmd/zkgroup/internal/config -run TestExampleConfig -update")
		}
	}

	// The rendered example loads and is valid.
	path := filepath.Join(t.TempDir(), "zkgroup.yaml")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{File: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the example is not valid: %v", err)
	}
	def := Default()
	text := string(want)
	for _, f := range Fields() {
		origin := c.Origin(f.Path)
		set := origin != "default"
		if !set {
			// Not set: it must be there commented out, under its section.
			key := f.Path[strings.LastIndexByte(f.Path, '.')+1:]
			ind := strings.Repeat("  ", strings.Count(f.Path, "."))
			if !regexp.MustCompile(`(?m)^` + ind + `# ` + regexp.QuoteMeta(key) + `: \S`).MatchString(text) {
				t.Errorf("%s is neither set nor commented out in the example", f.Path)
			}
			continue
		}
		// Set: the code's default, unless the example shows a value of its own.
		if ex := exampleKeys[f.Path]; ex.value == "" && f.text(c) != f.text(def) {
			t.Errorf("%s: the example sets %q, the code's default is %q", f.Path, f.text(c), f.text(def))
		}
		if len(f.Values) > 0 {
			block := commentAbove(text, f.Path)
			_, list, ok := strings.Cut(block, "One of:")
			for _, v := range f.Values {
				if !ok || !regexp.MustCompile(`(^|[\s,])`+regexp.QuoteMeta(v)+`[,.:\s]`).MatchString(list) {
					t.Errorf("%s: the example does not list the allowed value %q:\n%s", f.Path, v, block)
				}
			}
		}
	}
	// What the issue found: the example called leader-aware the default
	// and set it.
	if c.Strategy != assign.DefaultName || !strings.Contains(text, "strategy: "+assign.DefaultName+"\n") {
		t.Errorf("the example's strategy is %q, the default %q", c.Strategy, assign.DefaultName)
	}
	if n := len(Fields()); n < 50 {
		t.Errorf("only %d fields", n)
	}
}

// TestAllowedValues: a field that takes one of a list names the values
// Validate accepts, exactly: each value passes, a value off the list
// fails naming the field, and the strategies are those of the registry
// (assign.Names, assign.ByName).
func TestAllowedValues(t *testing.T) {
	base := func() *Config {
		c := Default()
		c.Group, c.ZooKeeper, c.Subscription = "g", "127.0.0.1:2181", "static:t"
		return c
	}
	enums := 0
	for _, f := range Fields() {
		if len(f.Values) == 0 {
			continue
		}
		enums++
		for _, v := range f.Values {
			c := base()
			if err := f.set(c, v); err != nil {
				t.Fatal(err)
			}
			switch f.Path {
			case "kafka.sasl.mechanism": // needs a user and a password
				c.Kafka.SASL.Username, c.Kafka.SASL.PasswordEnv = "u", "PW"
			case "sink.type":
				c.Sink.Exec.Command, c.Sink.HTTP.URL = []string{"true"}, "http://h/"
			case "sink.on_failure":
				c.Sink.DeadLetterTopic = "dlq"
			}
			if err := c.Validate(); err != nil {
				t.Errorf("%s: allowed value %q refused: %v", f.Path, v, err)
			}
		}
		c := base()
		if err := f.set(c, "no-such-value"); err != nil {
			t.Fatal(err)
		}
		var fe *FieldError
		err := c.Validate()
		if !errors.As(err, &fe) || fe.Field != f.Path {
			t.Errorf("%s: a value off the list gave %v", f.Path, err)
		}
	}
	if enums != 11 {
		t.Errorf("%d fields take one of a list, want 11", enums)
	}
	f, _ := fieldByPath("strategy")
	if !slices.Equal(f.Values, assign.Names()) || f.Values[0] != assign.DefaultName || Default().Strategy != assign.DefaultName {
		t.Errorf("strategy values %v, registry %v, default %q", f.Values, assign.Names(), assign.DefaultName)
	}
	for _, n := range f.Values {
		if _, err := assign.ByName(n); err != nil {
			t.Errorf("strategy %q: %v", n, err)
		}
	}
}

// commentAbove returns the comment lines right above the key at path in
// the example text (the first key of that name at that depth).
func commentAbove(text, path string) string {
	key := path[strings.LastIndexByte(path, '.')+1:]
	ind := strings.Repeat("  ", strings.Count(path, "."))
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, ind+key+":") && !strings.HasPrefix(l, ind+"# "+key+":") {
			continue
		}
		j := i
		for j > 0 && strings.HasPrefix(strings.TrimSpace(lines[j-1]), "#") {
			j--
		}
		return strings.Join(lines[j:i], "\n")
	}
	return ""
}

// TestHelpMatchesBounds: the help lines that state a bound say what
// Validate checks: session_timeout's and kafka_unreachable_timeout's
// ranges are manager's, and
// drain_timeout must be below shutdown_timeout (equal is refused; its
// comment once said "at most").
func TestHelpMatchesBounds(t *testing.T) {
	short := func(d time.Duration) string {
		s := d.String()
		for strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m") {
			s = s[:len(s)-2]
		}
		return s
	}
	f, _ := fieldByPath("session_timeout")
	if want := short(manager.MinSessionTimeout) + " to " + short(manager.MaxSessionTimeout); !strings.Contains(f.Help, want) {
		t.Errorf("session_timeout help %q does not say %q", f.Help, want)
	}
	f, _ = fieldByPath("kafka_unreachable_timeout")
	if want := short(manager.MinKafkaUnreachableTimeout) + " to " + short(manager.MaxKafkaUnreachableTimeout); !strings.Contains(f.Help, want) {
		t.Errorf("kafka_unreachable_timeout help %q does not say %q", f.Help, want)
	}
	f, _ = fieldByPath("partition.drain_timeout")
	if !strings.Contains(f.Help, "below shutdown_timeout") {
		t.Errorf("drain_timeout help %q", f.Help)
	}
	c := Default()
	c.Group, c.ZooKeeper, c.Subscription = "g", "127.0.0.1:2181", "static:t"
	c.Partition.DrainTimeout = c.ShutdownTimeout.D()
	var fe *FieldError
	if err := c.Validate(); !errors.As(err, &fe) || fe.Field != "partition.drain_timeout" || !strings.Contains(fe.Reason, "below") {
		t.Errorf("drain_timeout equal to shutdown_timeout: %v", err)
	}
	c.Partition.DrainTimeout = c.ShutdownTimeout.D() - time.Millisecond
	if err := c.Validate(); err != nil {
		t.Errorf("drain_timeout just below shutdown_timeout: %v", err)
	}
}
