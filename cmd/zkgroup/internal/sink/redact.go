package sink

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// masked is what a hidden password or query value shows as (net/url's
// Redacted shows a password so).
const masked = "xxxxx"

// RedactURL returns u for messages: the password of its user info and
// every value of its query string shown as "xxxxx" (a query often holds a
// token: ?token=, ?api_key=, ?sig=), the names kept; a query part without
// "=" is hidden whole. Text that does not parse as a URL is returned as
// "<unparsable URL>", since it may hold a secret. Pure.
func RedactURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return "<unparsable URL>"
	}
	parsed.RawQuery = maskQuery(parsed.RawQuery)
	return parsed.Redacted()
}

// maskQuery hides every value of a raw query string, keeping its names
// and order.
func maskQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		switch name, _, ok := strings.Cut(p, "="); {
		case ok:
			parts[i] = name + "=" + masked
		case p != "":
			parts[i] = masked
		}
	}
	return strings.Join(parts, "&")
}

// redactor hides a URL's secrets in error texts.
type redactor struct {
	full, shown         string // the URL and its RedactURL form
	rawQuery, maskedRaw string // its raw query and that masked ("" when none)
}

func newRedactor(u *url.URL, full string) redactor {
	r := redactor{full: full, shown: RedactURL(full)}
	if u.RawQuery != "" {
		r.rawQuery, r.maskedRaw = "?"+u.RawQuery, "?"+maskQuery(u.RawQuery)
	}
	return r
}

// err replaces the URL's secrets in err's text: the full URL by its
// redacted form, and its query string wherever it appears (net/http's
// *url.Error strips only the password and keeps the query); err stays
// unwrappable, and is returned as it is when nothing needed hiding.
func (r redactor) err(err error) error {
	text := err.Error()
	out := text
	if r.full != r.shown {
		out = strings.ReplaceAll(out, r.full, r.shown)
	}
	if r.rawQuery != "" {
		out = strings.ReplaceAll(out, r.rawQuery, r.maskedRaw)
	}
	if out == text {
		return err
	}
	return &redactedError{text: out, err: err}
}

// redactedError is an error whose text was redacted; it unwraps to the
// original.
type redactedError struct {
	text string
	err  error
}

// Error returns the redacted text.
func (e *redactedError) Error() string { return e.text }

// Unwrap returns the original error.
func (e *redactedError) Unwrap() error { return e.err }

// CheckHeaders returns an error wrapping ErrConfig, from HeaderProblem,
// when a header cannot be sent. Pure.
func CheckHeaders(h map[string]string) error {
	if p := HeaderProblem(h); p != "" {
		return fmt.Errorf("%w: %s", ErrConfig, p)
	}
	return nil
}

// HeaderProblem names the first header (in name order) whose name is not
// an HTTP token or whose value holds a character HTTP refuses (CR, LF,
// NUL, other controls but tab), and why; "" when every header can be
// sent. net/http would refuse every request carrying such a header. The
// text never shows a value (it may be a secret). Pure.
func HeaderProblem(h map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return fmt.Sprintf("header name %s is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)", quoteClipped(k))
		case !httpguts.ValidHeaderFieldValue(h[k]):
			return fmt.Sprintf("the value of header %s holds a control character (CR, LF, NUL, ...), which HTTP refuses", quoteClipped(k))
		}
	}
	return ""
}

// quoteClipped quotes s, cut to 64 bytes with "..." marking a cut.
func quoteClipped(s string) string {
	if len(s) <= 64 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:64])
}
