package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Exec runs a command per message: the value on its stdin and the
// metadata in environment variables ZKGROUP_TOPIC, ZKGROUP_PARTITION,
// ZKGROUP_OFFSET, ZKGROUP_KEY (base64 with ZKGROUP_KEY_ENCODING=base64
// when the key is not valid UTF-8 or holds a NUL), ZKGROUP_TIMESTAMP
// (RFC 3339), ZKGROUP_HEADERS (a JSON list as in Record) and
// ZKGROUP_FENCING_TOKEN (the claim's, see Record.FencingToken); no other
// ZKGROUP_ variable reaches it (see ExecConfig.Env). Exit status 0
// means delivered. Safe for concurrent use; Deliver blocks until the
// process exits, Timeout passes or ctx is done (then the process is
// killed).
type Exec struct {
	argv    []string
	timeout time.Duration
	env     []string
	stdout  io.Writer
	stderr  io.Writer
	outMu   sync.Mutex
}

// ExecConfig configures an Exec sink.
type ExecConfig struct {
	Command []string      // program and arguments, no shell
	Timeout time.Duration // per attempt
	// Env is the base environment ("K=V"), usually os.Environ(), less its
	// ZKGROUP_ variables: a process sees only those its own message or
	// batch sets (a daemon started by another's exec sink would pass on
	// the stale ones, and its own settings are none of the child's).
	Env    []string
	Stdout io.Writer // the processes' stdout; nil discards
	Stderr io.Writer // a copy of their stderr; nil discards
	// Mode is ModeMessage ("" too) or ModeBatch; NewExecSink picks the
	// sink by it, NewExec and NewExecBatch ignore it.
	Mode string
	// Batch bounds the batches of ModeBatch (see BatchLimits).
	Batch BatchLimits
}

// NewExecSink returns the sink of cfg.Mode: an *Exec for ModeMessage or
// "", an *ExecBatch for ModeBatch. Does not block.
func NewExecSink(cfg ExecConfig) (Sink, error) {
	return byMode("exec", cfg.Mode,
		func() (Sink, error) { return NewExec(cfg) },
		func() (Sink, error) { return NewExecBatch(cfg) })
}

// NewExec validates cfg and returns the per-message sink. Does not block.
func NewExec(cfg ExecConfig) (*Exec, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("%w: exec: Command: empty", ErrConfig)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("%w: exec: Timeout: %v is not positive", ErrConfig, cfg.Timeout)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	return &Exec{argv: append([]string(nil), cfg.Command...), timeout: cfg.Timeout,
		env: baseEnv(cfg.Env), stdout: cfg.Stdout, stderr: cfg.Stderr}, nil
}

// envPrefix starts every variable the exec sinks set.
const envPrefix = "ZKGROUP_"

// baseEnv copies env without its ZKGROUP_ variables.
func baseEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, envPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// Env returns the variables describing m, as the child sees them. Pure.
func Env(m *manager.Message) []string {
	env := []string{
		"ZKGROUP_TOPIC=" + m.Topic,
		"ZKGROUP_PARTITION=" + strconv.FormatInt(int64(m.Partition), 10),
		"ZKGROUP_OFFSET=" + strconv.FormatInt(m.Offset, 10),
		"ZKGROUP_TIMESTAMP=" + m.Timestamp.UTC().Format(time.RFC3339Nano),
		"ZKGROUP_FENCING_TOKEN=" + strconv.FormatInt(m.FencingToken(), 10),
	}
	switch {
	case m.Key == nil:
		env = append(env, "ZKGROUP_KEY=")
	case utf8.Valid(m.Key) && !bytes.ContainsRune(m.Key, 0):
		env = append(env, "ZKGROUP_KEY="+string(m.Key))
	default:
		env = append(env, "ZKGROUP_KEY="+base64.StdEncoding.EncodeToString(m.Key), "ZKGROUP_KEY_ENCODING="+Base64)
	}
	hs := NewRecord(&manager.Message{Headers: m.Headers}).Headers
	b, _ := json.Marshal(hs)
	if !bytes.ContainsRune(b, 0) {
		env = append(env, "ZKGROUP_HEADERS="+string(b))
	}
	return env
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

// Write keeps the tail of p; never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// lockedWriter serialises writes of concurrent children.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write writes p under the shared lock.
func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Deliver runs the command once for m.
func (e *Exec) Deliver(ctx context.Context, m *manager.Message) error {
	where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
	err := e.run(ctx, where, m.Value, Env(m))
	if errors.Is(err, syscall.E2BIG) {
		// The kernel refused the environment or arguments as too large:
		// this message's key or headers will never fit, however often it
		// is tried. A permanent failure of this message: the failure
		// policy decides (skip, dead-letter, or stop).
		return Permanent(fmt.Errorf("%w: exec %q for %s: the message's key (%d bytes) and headers (%d) exceed the environment size limit of a process: %w",
			ErrTooLarge, e.argv[0], where, len(m.Key), headersSize(m), err))
	}
	return err
}

// run runs the command once with stdin and the base environment plus env;
// where names what it delivers, for error texts. nil when it exited 0;
// else an error naming the exit status (an *exec.ExitError in its chain)
// or the kill after the timeout, with the tail of its stderr; a failure
// to start is returned wrapped as it is (E2BIG for an environment too
// large).
func (e *Exec) run(ctx context.Context, where string, stdin []byte, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.argv[0], e.argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(append(make([]string, 0, len(e.env)+len(env)), e.env...), env...)
	tail := &tailBuffer{max: 2048}
	cmd.Stdout = lockedWriter{&e.outMu, e.stdout}
	cmd.Stderr = io.MultiWriter(tail, lockedWriter{&e.outMu, e.stderr})
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(tail.b))
	if msg != "" {
		msg = ": stderr: " + msg
	}
	var ee *exec.ExitError
	switch {
	case errors.Is(err, syscall.E2BIG):
		return fmt.Errorf("sink: exec %q for %s: %w", e.argv[0], where, err)
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("sink: exec %q for %s: killed after %v%s", e.argv[0], where, e.timeout, msg)
	case errors.As(err, &ee):
		return fmt.Errorf("sink: exec %q for %s: %w%s", e.argv[0], where, ee, msg)
	}
	return fmt.Errorf("sink: exec %q for %s: %w", e.argv[0], where, err)
}

// Close does nothing: no process outlives Deliver.
func (e *Exec) Close() error { return nil }

// headersSize adds up the sizes of m's header keys and values.
func headersSize(m *manager.Message) int {
	n := 0
	for _, h := range m.Headers {
		if h != nil {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
}
