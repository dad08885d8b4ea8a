package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// Field describes one settable leaf of Config. A plain value, safe for
// concurrent reads.
type Field struct {
	Path  string // dotted YAML path: "partition.max_unacked"
	Env   string // ZKGROUP_PARTITION_MAX_UNACKED
	Flag  string // partition-max-unacked
	Usage string // the kind of value, for flag help: "integer", "duration, e.g. 10s"
	Help  string // what the field means, for flag help
	// Values are the values the field accepts when it takes one of a
	// list (strategy, sink.type, ...), as Validate checks them; nil for
	// any other field. An empty value may also be accepted: the help
	// says so.
	Values []string
	at     func(c *Config) reflect.Value // the field's addressable value in c
	split  string                        // "space" for []string split at spaces; default ","
	redact string                        // "url": the password of a URL is hidden in messages
	value  string                        // the kind of value in flag help when not its type's ("duration|off|session_timeout")
	ph     string                        // the kind of value in flag help by its type ("duration")
}

// EnvPrefix starts every environment variable of a field.
const EnvPrefix = "ZKGROUP_"

var fieldList = buildFields()

// yamlKey returns sf's YAML key; ok is false for a field YAML leaves
// out. Pure.
func yamlKey(sf reflect.StructField) (key string, ok bool) {
	key = strings.Split(sf.Tag.Get("yaml"), ",")[0]
	return key, key != "" && key != "-"
}

// Fields returns every settable field in declaration order. Safe for
// concurrent use; does not block.
func Fields() []Field { return append([]Field(nil), fieldList...) }

func buildFields() []Field {
	var out []Field
	var walk func(t reflect.Type, prefix string, at func(*Config) reflect.Value)
	walk = func(t reflect.Type, prefix string, at func(*Config) reflect.Value) {
		for _, m := range members(t) {
			path := joinPath(prefix, m.key)
			mat := func(c *Config) reflect.Value { return m.at(at(c)) }
			if m.typ.Kind() == reflect.Struct {
				walk(m.typ, path, mat)
				continue
			}
			under := strings.ReplaceAll(path, ".", "_")
			split := m.tag.Get("split")
			use, ph := valueKind(m.typ, split)
			out = append(out, Field{
				Path:   path,
				Env:    EnvPrefix + strings.ToUpper(under),
				Flag:   strings.ReplaceAll(under, "_", "-"),
				Usage:  use,
				Help:   m.help,
				Values: enumValues(path),
				at:     mat,
				split:  split,
				redact: m.tag.Get("redact"),
				value:  m.tag.Get("value"),
				ph:     ph,
			})
		}
	}
	walk(reflect.TypeFor[Config](), "", func(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() })
	return out
}

// enumValues returns the values accepted by the field at path when it
// takes one of a list, from the same constants and registries Validate
// checks against (the strategies from assign.Names); nil for any other
// field. Pure.
func enumValues(path string) []string {
	switch path {
	case "strategy":
		return assign.Names()
	case "offset_storage":
		return []string{string(manager.StorageKafka), string(manager.StorageZooKeeper)}
	case "partition.initial":
		return []string{string(manager.InitialOldest), string(manager.InitialNewest)}
	case "sink.type":
		return []string{SinkStdout, SinkExec, SinkHTTP}
	case "sink.exec.mode", "sink.http.mode":
		return []string{ModeMessage, ModeBatch}
	case "sink.on_failure":
		return []string{OnFailureStop, OnFailureSkip, OnFailureDeadLetter}
	case "log.format":
		return []string{LogText, LogJSON}
	case "log.level":
		return []string{"debug", "info", "warn", "error"}
	case "kafka.isolation_level":
		return []string{IsolationReadUncommitted, IsolationReadCommitted}
	case "kafka.sasl.mechanism":
		return []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}
	}
	return nil
}

// oneOf formats values as `"a", "b" or "c"`, for messages. Pure.
func oneOf(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// checkOneOf checks that the field at path holds one of its Values.
func (c *Config) checkOneOf(path string) error {
	f, ok := fieldByPath(path)
	if !ok {
		return fmt.Errorf("%w: no field %q", ErrConfig, path)
	}
	if slices.Contains(f.Values, f.text(c)) {
		return nil
	}
	return c.bad(path, "must be "+oneOf(f.Values), nil)
}

// valueKind names the kind of value of a field of type t: usage, for
// Field.Usage, and placeholder, the word of its flag's help line
// (flag.UnquoteUsage takes the back-quoted word: "-session-timeout
// duration"). Pure.
func valueKind(t reflect.Type, split string) (usage, placeholder string) {
	switch {
	case isDuration(t):
		return "duration, e.g. 10s", "duration"
	case t.Kind() == reflect.Slice && split == "space":
		return "words separated by spaces", "words"
	case t.Kind() == reflect.Slice:
		return "comma-separated list", "a,b,..."
	case t.Kind() == reflect.Map:
		return "k=v,k2=v2", "k=v,..."
	case t.Kind() == reflect.Int:
		return "integer", "int"
	case t.Kind() == reflect.Bool:
		return "true or false", "true|false"
	}
	return "text", "text"
}

// set parses text into the field of c.
func (f Field) set(c *Config, text string) error {
	v := f.at(c)
	switch {
	case isDuration(v.Type()):
		d, err := parseDuration(strings.TrimSpace(text))
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(text)
	case v.Kind() == reflect.Int:
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("%q is not an integer", text)
		}
		v.SetInt(int64(n))
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("%q is not true or false", text)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Slice:
		var parts []string
		if f.split == "space" {
			parts = strings.Fields(text)
		} else {
			for _, p := range strings.Split(text, ",") {
				if p = strings.TrimSpace(p); p != "" {
					parts = append(parts, p)
				}
			}
		}
		v.Set(reflect.ValueOf(parts))
	case v.Kind() == reflect.Map:
		m := map[string]string{}
		for _, p := range strings.Split(text, ",") {
			if strings.TrimSpace(p) == "" {
				continue
			}
			k, val, ok := strings.Cut(p, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("%q is not k=v", p)
			}
			m[strings.TrimSpace(k)] = val
		}
		v.Set(reflect.ValueOf(m))
	default:
		return fmt.Errorf("field kind %s cannot be set from text", v.Kind())
	}
	return nil
}

// text formats the field's value of c for messages.
func (f Field) text(c *Config) string {
	v := f.at(c)
	switch {
	case isDuration(v.Type()):
		return Duration(v.Int()).String()
	case v.Kind() == reflect.Slice:
		sep := ","
		if f.split == "space" {
			sep = " "
		}
		return strings.Join(v.Interface().([]string), sep)
	case v.Kind() == reflect.Map:
		m := v.Interface().(map[string]string)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return strings.Join(keys, ",") // values may be secrets
	case f.redact == "url":
		return RedactURL(v.String())
	}
	return fmt.Sprint(v.Interface())
}

// fieldByPath returns the field with a dotted path.
func fieldByPath(path string) (Field, bool) {
	for _, f := range fieldList {
		if f.Path == path {
			return f, true
		}
	}
	return Field{}, false
}

// RedactURL returns u for messages with the password of its user info and
// every query value hidden (see sink.RedactURL). Pure.
func RedactURL(u string) string { return sink.RedactURL(u) }
