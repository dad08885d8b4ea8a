package admin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, h http.Handler, method, path, body string, header ...string) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b), rec.Result().Header
}

// getStatus GETs url with c and returns the response's status code; it
// fails t when the request fails.
func getStatus(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestToken: with a token, everything but /healthz and /readyz needs it,
// as a bearer token or a basic-auth password.
func TestToken(t *testing.T) {
	s := New(Config{Group: "g", Token: "s3cret", LogLevel: new(slog.LevelVar)})
	s.SetSource(&fakeSource{st: stats()})
	h := s.Handler()
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _, _ := do(t, h, "GET", p, ""); code != 200 {
			t.Errorf("%s without a token: %d", p, code)
		}
	}
	for _, p := range []string{"/", "/status", "/metrics", "/loglevel", "/nope"} {
		code, body, hdr := do(t, h, "GET", p, "")
		if code != 401 || !strings.Contains(hdr.Get("WWW-Authenticate"), "Basic") || strings.Contains(body, "s3cret") {
			t.Errorf("%s without a token: %d %q", p, code, hdr)
		}
		if code, _, _ := do(t, h, "GET", p, "", "Authorization", "Bearer wrong"); code != 401 {
			t.Errorf("%s with a wrong token: %d", p, code)
		}
	}
	if code, _, _ := do(t, h, "GET", "/metrics", "", "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("bearer: %d", code)
	}
	req := httptest.NewRequest("GET", "/status", nil)
	req.SetBasicAuth("anyone", "s3cret")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("basic: %d", rec.Code)
	}
}

func TestLogLevelControl(t *testing.T) {
	var buf bytes.Buffer
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelInfo)
	log := slog.New(LevelHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), lv)).With("k", "v")
	log.Debug("hidden")
	s := New(Config{Group: "g", LogLevel: lv, Logger: log})
	h := s.Handler()
	if code, body, _ := do(t, h, "GET", "/loglevel", ""); code != 200 || strings.TrimSpace(body) != "info" {
		t.Fatalf("get: %d %q", code, body)
	}
	if code, body, _ := do(t, h, "PUT", "/loglevel", "loud"); code != 400 || !strings.Contains(body, `"loud"`) {
		t.Fatalf("bad level: %d %q", code, body)
	}
	if code, body, _ := do(t, h, "PUT", "/loglevel", "debug\n"); code != 200 || strings.TrimSpace(body) != "debug" {
		t.Fatalf("put: %d %q", code, body)
	}
	log.WithGroup("grp").Debug("shown")
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, "msg=shown") || !strings.Contains(out, "k=v") ||
		!strings.Contains(out, "log level changed") {
		t.Fatalf("log:\n%s", out)
	}
	// Off unless configured.
	if code, _, _ := do(t, New(Config{Group: "g"}).Handler(), "GET", "/loglevel", ""); code != 404 {
		t.Fatalf("loglevel without LogLevel: %d", code)
	}
}

func TestPprof(t *testing.T) {
	if code, _, _ := do(t, New(Config{Group: "g"}).Handler(), "GET", "/debug/pprof/", ""); code != 404 {
		t.Fatalf("pprof off by default: %d", code)
	}
	code, body, _ := do(t, New(Config{Group: "g", Pprof: true}).Handler(), "GET", "/debug/pprof/goroutine?debug=1", "")
	if code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("pprof on: %d %.80q", code, body)
	}
}

// TestTLS: with a certificate and key, the server speaks HTTPS only.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	if _, err := New(Config{Group: "g", TLSCertFile: cert}).Listen("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("cert without key: %v", err)
	}
	if _, err := New(Config{Group: "g", TLSCertFile: key, TLSKeyFile: key}).Listen("127.0.0.1:0"); err == nil {
		t.Fatal("a key as certificate accepted")
	}
	s := New(Config{Group: "g", TLSCertFile: cert, TLSKeyFile: key})
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	if code := getStatus(t, c, "https://"+addr.String()+"/healthz"); code != 200 {
		t.Fatalf("https: %d", code)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr.String() + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP served")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkgroup admin test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
