package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// cmdHealthcheck GETs a daemon's /healthz and exits 0 on 200, 1
// otherwise: the container image's HEALTHCHECK (the image has no curl).
func cmdHealthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:9090/healthz", "URL to probe")
	timeout := fs.Duration("timeout", 3*time.Second, "request timeout")
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
	resp, err := http.DefaultClient.Do(req)
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
