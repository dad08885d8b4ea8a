package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileError reports a problem in the config file: a syntax error, an
// unknown key, a value of the wrong type. Key is the dotted path of the key
// on Line when known. It unwraps to ErrInvalid. A plain value, safe for
// concurrent reads.
type FileError struct {
	File string
	Line int
	Key  string
	Msg  string
}

// Error formats the error as `config: <file> line <n>: <key>: <msg>`.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *FileError) Unwrap() error { return ErrInvalid }

var (
	lineRE    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type`)
)

// applyYAML decodes a YAML document onto c, refusing unknown keys, and
// records the line of every key as its origin.
func (c *Config) applyYAML(name string, data []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return translate(name, nil, err)
	}
	keys := map[int]string{} // line -> dotted key path
	lines := map[string]int{}
	if len(root.Content) > 0 {
		recordKeys(root.Content[0], "", keys, lines)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return translate(name, keys, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return &FileError{File: name, Line: extra.Line, Msg: "more than one YAML document"}
	}
	for path, line := range lines {
		c.origins[path] = fmt.Sprintf("%s line %d", name, line)
	}
	return nil
}

// recordKeys maps each key's line to its dotted path and back.
func recordKeys(n *yaml.Node, prefix string, keys map[int]string, lines map[string]int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		keys[k.Line] = path // deeper keys on the same line overwrite
		lines[path] = k.Line
		if v.Kind == yaml.ScalarNode && v.Line != k.Line {
			if _, ok := keys[v.Line]; !ok {
				keys[v.Line] = path
			}
		}
		recordKeys(v, path, keys, lines)
	}
}

// translate turns a yaml error into FileErrors naming line and key.
func translate(name string, keys map[int]string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, m := range msgs {
		fe := &FileError{File: name, Msg: strings.TrimPrefix(m, "yaml: ")}
		if sub := lineRE.FindStringSubmatch(m); sub != nil {
			fe.Line, _ = strconv.Atoi(sub[1])
			fe.Msg = sub[2]
			fe.Key = keys[fe.Line]
		}
		if sub := unknownRE.FindStringSubmatch(fe.Msg); sub != nil {
			fe.Msg = fmt.Sprintf("unknown key %q%s", sub[1], known(fe.Key))
			fe.Key = ""
		}
		errs = append(errs, fe)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// known lists the valid keys beside the unknown key path.
func known(path string) string {
	parent := ""
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent = path[:i]
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range fieldList {
		rest, ok := strings.CutPrefix(f.Path, parent)
		if parent != "" {
			if !ok || !strings.HasPrefix(rest, ".") {
				continue
			}
			rest = rest[1:]
		}
		head, _, _ := strings.Cut(rest, ".")
		if !seen[head] {
			seen[head] = true
			names = append(names, head)
		}
	}
	where := "at the top level"
	if parent != "" {
		where = "under " + parent
	}
	at := ""
	if path != "" {
		at = " at " + path
	}
	return fmt.Sprintf("%s; valid keys %s: %s", at, where, strings.Join(names, ", "))
}
