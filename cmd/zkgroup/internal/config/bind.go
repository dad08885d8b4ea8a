package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// binding ties one key of a section to a field of a library value that
// the section holds: the daemon declares the key and its help, the library
// the field, its type and its default. A time.Duration field reads and
// prints as duration text, as Duration does.
type binding struct {
	key  string
	help string
	ptr  any // a pointer to the library's field: *int, *time.Duration, *partition.Initial, ...
}

// boundSection is a section whose keys are the rows of a binding table
// instead of struct fields with yaml tags; its type also decodes YAML and
// encodes JSON through decodeBound and encodeBound.
type boundSection interface {
	bindings() []binding
}

var boundSectionType = reflect.TypeFor[boundSection]()

// member is one key of a section: a struct field with a yaml tag, or a
// row of a bound section's table.
type member struct {
	key  string
	help string
	tag  reflect.StructTag // split, redact and value tags; empty for a binding
	typ  reflect.Type
	// at returns the member within its section's addressable value.
	at func(section reflect.Value) reflect.Value
}

// members lists the keys of the section type t in order: its bindings
// when t is a boundSection, else its fields with a yaml key. Pure.
func members(t reflect.Type) []member {
	var out []member
	if reflect.PointerTo(t).Implements(boundSectionType) {
		for i, b := range reflect.New(t).Interface().(boundSection).bindings() {
			out = append(out, member{key: b.key, help: b.help, typ: reflect.TypeOf(b.ptr).Elem(),
				at: func(v reflect.Value) reflect.Value {
					return reflect.ValueOf(v.Addr().Interface().(boundSection).bindings()[i].ptr).Elem()
				}})
		}
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if key, ok := yamlKey(sf); ok {
			out = append(out, member{key: key, help: sf.Tag.Get("help"), tag: sf.Tag, typ: sf.Type,
				at: func(v reflect.Value) reflect.Value { return v.Field(i) }})
		}
	}
	return out
}

var (
	durationType     = reflect.TypeFor[Duration]()
	timeDurationType = reflect.TypeFor[time.Duration]()
)

// isDuration reports whether t holds duration text: Duration or a
// library's time.Duration.
func isDuration(t reflect.Type) bool { return t == durationType || t == timeDurationType }

// plainType is the type a bound field's YAML value decodes into before it
// is converted to the field's type: Duration for a duration (its unit is
// required), the basic type of a named string or integer (so that a
// decoding error names "string" or "int", not the library's type).
func plainType(t reflect.Type) reflect.Type {
	switch {
	case isDuration(t):
		return durationType
	case t.Kind() == reflect.String:
		return reflect.TypeFor[string]()
	case t.Kind() == reflect.Int:
		return reflect.TypeFor[int]()
	}
	return t
}

// decodeBound decodes the mapping n onto the bound fields of rows. Type
// errors are gathered as the YAML decoder gathers them; any other error
// stops the decoding. The keys were checked by checkTree.
func decodeBound(n *yaml.Node, rows []binding) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of keys, got a YAML %s", n.Line, kindName(n.Kind))
	}
	var typeErrs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		b, ok := bindingOf(rows, k.Value)
		if !ok {
			return fmt.Errorf("line %d: unknown key %q", k.Line, k.Value)
		}
		field := reflect.ValueOf(b.ptr).Elem()
		tmp := reflect.New(plainType(field.Type()))
		if err := v.Decode(tmp.Interface()); err != nil {
			te, ok := err.(*yaml.TypeError)
			if !ok {
				return err
			}
			typeErrs = append(typeErrs, te.Errors...)
			continue
		}
		field.Set(tmp.Elem().Convert(field.Type()))
	}
	if len(typeErrs) > 0 {
		return &yaml.TypeError{Errors: typeErrs}
	}
	return nil
}

// encodeBound encodes rows as a JSON object of their keys in order,
// durations as duration text.
func encodeBound(rows []binding) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, r := range rows {
		v := reflect.ValueOf(r.ptr).Elem()
		if isDuration(v.Type()) {
			v = reflect.ValueOf(Duration(v.Int()))
		}
		val, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(r.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func bindingOf(rows []binding, key string) (binding, bool) {
	for _, r := range rows {
		if r.key == key {
			return r, true
		}
	}
	return binding{}, false
}

// joinPath joins a dotted path prefix ("" at the top) and a key.
func joinPath(prefix, key string) string {
	return strings.TrimPrefix(prefix+"."+key, ".")
}
