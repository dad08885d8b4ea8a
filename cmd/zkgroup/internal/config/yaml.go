package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileError reports a problem in the config file: a syntax error, an
// unknown key, a value of the wrong type. Key is the dotted path of the key
// on Line when known. It unwraps to ErrConfig. A plain value, safe for
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

// Unwrap returns ErrConfig.
func (e *FileError) Unwrap() error { return ErrConfig }

var (
	lineRE    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type`)
)

// applyYAML decodes a YAML document onto c, refusing unknown keys, and
// records the line of every key as its origin.
func (c *Config) applyYAML(name string, data []byte) error {
	if len(data) > MaxFileSize {
		return &FileError{File: name, Msg: fmt.Sprintf("larger than %d bytes: not a zkgroup configuration", MaxFileSize)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return translate(name, nil, err)
	}
	// Check the tree before decoding it: unknown and repeated keys, and
	// numbers that an integer field would truncate. Decoding a mapping
	// compares every key with every other, so a file of many unknown keys
	// must be refused here, after the first few.
	if len(root.Content) > 0 {
		if err := checkTree(name, root.Content[0]); err != nil {
			return err
		}
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

// Limits of checkTree.
const (
	// maxUnknownReported is how many unknown keys an error lists.
	maxUnknownReported = 3
	// maxMapEntries bounds a free-form mapping (sink.http.headers).
	maxMapEntries = 256
)

// checkTree walks the document against Config's fields and returns the
// first problems: the first unknown keys (at most maxUnknownReported),
// a key given twice, a mapping where a value belongs, or a number with a
// fraction for an integer field. Linear in the size of the tree.
func checkTree(name string, doc *yaml.Node) error {
	if doc.Kind != yaml.MappingNode {
		if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
			return nil
		}
		return &FileError{File: name, Line: doc.Line, Msg: "the configuration must be a mapping of keys to values"}
	}
	w := treeWalker{name: name}
	w.walk(doc, reflect.TypeFor[Config](), "")
	if w.more > 0 {
		w.errs = append(w.errs, &FileError{File: name, Msg: fmt.Sprintf("and %d more unknown key(s) not listed", w.more)})
	}
	if len(w.errs) == 1 {
		return w.errs[0]
	}
	return errors.Join(w.errs...)
}

type treeWalker struct {
	name    string
	errs    []error
	unknown int
	more    int
}

// full reports whether walking can stop: an error other than unknown
// keys, or enough unknown keys.
func (w *treeWalker) full() bool {
	return len(w.errs) > w.unknown || w.unknown >= maxUnknownReported
}

func (w *treeWalker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case isDuration(t):
		return // Duration's UnmarshalYAML reports what is wrong
	case t.Kind() == reflect.Struct:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.MappingNode {
			w.errs = append(w.errs, &FileError{File: w.name, Line: n.Line, Key: path, Msg: "want a mapping of keys, got a YAML " + kindName(n.Kind)})
			return
		}
		keys := map[string]reflect.Type{}
		for _, m := range members(t) {
			keys[m.key] = m.typ
		}
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := k.Value
			if path != "" {
				kp = path + "." + k.Value
			}
			ft, ok := keys[k.Value]
			switch {
			case !ok && w.unknown >= maxUnknownReported:
				w.more++
				continue
			case !ok:
				w.unknown++
				w.errs = append(w.errs, &FileError{File: w.name, Line: k.Line, Msg: fmt.Sprintf("unknown key %q%s", k.Value, known(kp))})
				continue
			}
			if first, dup := seen[k.Value]; dup {
				w.errs = append(w.errs, &FileError{File: w.name, Line: k.Line, Key: kp, Msg: fmt.Sprintf("given twice (first on line %d)", first)})
				return
			}
			seen[k.Value] = k.Line
			if len(w.errs) > w.unknown {
				return
			}
			w.walk(v, ft, kp)
			if len(w.errs) > w.unknown {
				return
			}
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return // the decoder names the type mismatch
		}
		if len(n.Content)/2 > maxMapEntries {
			w.errs = append(w.errs, &FileError{File: w.name, Line: n.Line, Key: path, Msg: fmt.Sprintf("%d entries; at most %d", len(n.Content)/2, maxMapEntries)})
			return
		}
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, dup := seen[k.Value]; dup {
				w.errs = append(w.errs, &FileError{File: w.name, Line: k.Line, Key: path, Msg: fmt.Sprintf("%q given twice (first on line %d)", k.Value, first)})
				return
			}
			seen[k.Value] = k.Line
		}
	case t.Kind() == reflect.Int:
		if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!int" && n.ShortTag() != "!!str" && n.ShortTag() != "!!null" {
			w.errs = append(w.errs, &FileError{File: w.name, Line: n.Line, Key: path, Msg: fmt.Sprintf("want a whole number, got %s (a %s)", n.Value, strings.TrimPrefix(n.ShortTag(), "!!"))})
		}
	}
}
