package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireToken wraps h so that it answers 401 unless the request carries
// the token: "Authorization: Bearer <token>" (Prometheus' authorization
// setting, curl -H), or HTTP basic authentication with the token as the
// password and any user name (what a browser prompts for, so that the
// group page works in one). An empty token lets everything through.
func requireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got string
		if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			got = strings.TrimSpace(auth[7:])
		} else if _, pass, ok := r.BasicAuth(); ok {
			got = pass
		}
		sum := sha256.Sum256([]byte(got))
		if got == "" || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="zkgroup admin", charset="UTF-8"`)
			writeText(w, http.StatusUnauthorized, "unauthorized: send the admin token as a bearer token (Authorization: Bearer ...) or as the basic-auth password")
			return
		}
		h.ServeHTTP(w, r)
	})
}
