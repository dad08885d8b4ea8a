package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// defaultAdminListen is the admin server's default address: 9779, not
// 9090, which is Prometheus' own.
const defaultAdminListen = "127.0.0.1:9779"

// healthURL is the /healthz URL of a daemon listening on listen (empty:
// the default), probed on loopback when it listens on every address.
func healthURL(listen string) string {
	if listen == "" {
		listen = defaultAdminListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen + "/healthz"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}

// cmdHealthcheck GETs a daemon's /healthz and exits 0 on 200, 1
// otherwise: the container image's HEALTHCHECK (the image has no curl).
// Without --url it probes the address in ZKGROUP_ADMIN_LISTEN (the
// image's setting), so that overriding the port keeps the check working.
func cmdHealthcheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("healthcheck", stderr)
	url := fs.String("url", healthURL(os.Getenv("ZKGROUP_ADMIN_LISTEN")), "URL to probe (default: /healthz on the address of ZKGROUP_ADMIN_LISTEN)")
	timeout := fs.Duration("timeout", 3*time.Second, "request timeout")
	insecure := fs.Bool("insecure", false, "do not verify the certificate of an https URL (a self-signed admin certificate, probed on loopback)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fail(stdout, stderr, *asJSON, exitUsage, fmt.Errorf("healthcheck: --url %q: %w", *url, err))
	}
	client := http.DefaultClient
	if *insecure {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // asked for; the probe stays on loopback
		client = &http.Client{Transport: tr}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fail(stdout, stderr, *asJSON, exitFailure, fmt.Errorf("healthcheck: %w", err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	msg := strings.TrimSpace(string(body))
	healthy := resp.StatusCode == http.StatusOK
	if *asJSON {
		_ = printJSON(stdout, map[string]any{"healthy": healthy, "status": resp.StatusCode, "body": msg})
	} else {
		fmt.Fprintf(stdout, "%s: %s %s\n", *url, resp.Status, msg)
	}
	if !healthy {
		return exitFailure
	}
	return exitOK
}
