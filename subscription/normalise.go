package subscription

import "strings"

// normalise rewrites a wildcard expression the way Kafka's TopicFilter does,
// in the same order: trim characters up to and including ' ' from both ends
// (Java's String.trim), replace ',' with '|', remove spaces, then strip
// leading and trailing runs of double and single quotes (property files may
// carry quotes).
// Like Kafka's, a single pass is not always idempotent.
func normalise(expr string) string {
	expr = strings.TrimFunc(expr, func(r rune) bool { return r <= ' ' })
	expr = strings.ReplaceAll(expr, ",", "|")
	expr = strings.ReplaceAll(expr, " ", "")
	expr = strings.TrimLeft(expr, `"'`)
	expr = strings.TrimRight(expr, `"'`)
	return expr
}
