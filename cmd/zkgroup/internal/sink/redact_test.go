package sink

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// TestHTTPQuerySecretNotShown: a token in the sink URL's query string was
// shown in every failed delivery's error and retry warning (only a
// password was hidden). Every query value is now shown as xxxxx there,
// while the request still carries the real one.
func TestHTTPQuerySecretNotShown(t *testing.T) {
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.RawQuery:
		default:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	closed := refusedURL(t)
	for _, base := range []string{srv.URL, strings.Replace(closed, "http://", "http://bob:hunter2@", 1)} {
		url := base + "/in?token=s3cr3t&api_key=k3y"
		for _, text := range failedTexts(t, url) {
			if strings.Contains(text, "s3cr3t") || strings.Contains(text, "k3y") || strings.Contains(text, "hunter2") ||
				!strings.Contains(text, "token=xxxxx&api_key=xxxxx") {
				t.Fatalf("secret shown or URL missing: %s", text)
			}
		}
	}
	if q := <-got; q != "token=s3cr3t&api_key=k3y" {
		t.Errorf("the server got query %q, want the real one", q)
	}
}

// TestHTTPHeadersRefused: a configured header that net/http refuses (CR,
// LF or NUL in its value, a bad name) made every delivery fail until the
// daemon stopped; the sink now refuses it up front, naming the header and
// never its value.
func TestHTTPHeadersRefused(t *testing.T) {
	for name, h := range map[string]map[string]string{
		"CRLF value": {"X-Token": "s3cr3t\r\nX-Evil: 1"},
		"LF value":   {"X-Token": "s3cr3t\nx"},
		"NUL value":  {"X-Token": "s3cr3t\x00"},
		"bad name":   {"X Token": "s3cr3t"},
		"empty name": {"": "s3cr3t"},
	} {
		_, err := NewHTTPSink(HTTPConfig{URL: "http://h/", Timeout: time.Second, Headers: h})
		if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "header") {
			t.Errorf("%s: %v, want ErrConfig naming the header without its value", name, err)
		}
	}
	if _, err := NewHTTPSink(HTTPConfig{URL: "http://h/", Timeout: time.Second, Headers: map[string]string{"Authorization": "Bearer a\tb"}}); err != nil {
		t.Errorf("a tab in a value is allowed: %v", err)
	}
}

// TestExecCleanEnv: a child saw the daemon's own ZKGROUP_ variables: a
// daemon started by another's exec sink passed on the stale
// ZKGROUP_KEY_ENCODING of its parent's message, and in batch mode stale
// ZKGROUP_KEY, ZKGROUP_OFFSET and ZKGROUP_HEADERS. A child now sees only
// the ZKGROUP_ variables of its own message or batch.
func TestExecCleanEnv(t *testing.T) {
	inherited := []string{"PATH=/usr/bin:/bin", "ZKGROUP_KEY_ENCODING=base64", "ZKGROUP_KEY=stale", "ZKGROUP_OFFSET=999",
		"ZKGROUP_HEADERS=[stale]", "ZKGROUP_ZOOKEEPER=zk:2181", "ZKGROUP_COUNT=7", "KEEP=me"}
	for _, tc := range []struct {
		mode string
		want []string // the child's ZKGROUP_ variables, sorted
	}{
		{ModeMessage, []string{"ZKGROUP_FENCING_TOKEN", "ZKGROUP_HEADERS", "ZKGROUP_KEY", "ZKGROUP_OFFSET", "ZKGROUP_PARTITION", "ZKGROUP_TIMESTAMP", "ZKGROUP_TOPIC"}},
		{ModeBatch, []string{"ZKGROUP_COUNT", "ZKGROUP_FENCING_TOKEN", "ZKGROUP_FIRST_OFFSET", "ZKGROUP_LAST_OFFSET", "ZKGROUP_PARTITION", "ZKGROUP_TOPIC"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "env")
			s, err := NewExecSink(ExecConfig{Command: []string{"/bin/sh", "-c", `env > "$OUT"`}, Timeout: 10 * time.Second,
				Env: append(inherited, "OUT="+out), Mode: tc.mode, Batch: BatchLimits{MaxMessages: 10, MaxBytes: 1 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			// a printable key: no ZKGROUP_KEY_ENCODING of its own
			if err := deliverSome(s, []*manager.Message{msg([]byte("v"))}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var seen []string
			env := strings.Split(strings.TrimSpace(string(b)), "\n")
			for _, kv := range env {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ZKGROUP_") {
					seen = append(seen, k)
				}
			}
			slices.Sort(seen)
			if !slices.Equal(seen, tc.want) || !slices.Contains(env, "KEEP=me") {
				t.Errorf("child's ZKGROUP_ variables %v, want %v (and KEEP=me)", seen, tc.want)
			}
			for _, kv := range env {
				if kv == "ZKGROUP_OFFSET=999" || kv == "ZKGROUP_KEY=stale" {
					t.Errorf("child inherited %s", kv)
				}
			}
		})
	}
}
