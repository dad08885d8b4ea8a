package admin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
)

// pageHTML is the live group page: one self-contained file (inline style
// and script, no external resource) that polls /status.
//
//go:embed page.html
var pageHTML []byte

// pageCSP allows exactly the page's own inline style and script (by
// hash) and requests to this server.
var pageCSP = "default-src 'none'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'" +
	"; style-src " + inlineHash(pageHTML, "style") + "; script-src " + inlineHash(pageHTML, "script")

// inlineHash returns the CSP source ('sha256-...') of the first inline
// element tag of page.
func inlineHash(page []byte, tag string) string {
	s := string(page)
	open := "<" + tag + ">"
	i := strings.Index(s, open)
	j := strings.Index(s, "</"+tag+">")
	if i < 0 || j < i {
		return "'none'"
	}
	sum := sha256.Sum256([]byte(s[i+len(open) : j]))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// page serves the group page.
func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(pageHTML)
}
