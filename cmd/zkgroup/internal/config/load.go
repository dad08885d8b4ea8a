package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Overrides holds the field values given as command-line flags. Build it
// with RegisterFlags. Not safe for concurrent use (flag parsing is
// sequential).
type Overrides struct {
	vals map[string]string // by field path
}

// RegisterFlags adds one flag per field to fs (--group, --zookeeper,
// --partition-max-unacked, ...) and returns the Overrides that collect the
// flags set once fs.Parse ran. Values are parsed by Load, so a bad one is
// reported like any other bad field. Does not block.
func RegisterFlags(fs *flag.FlagSet) *Overrides {
	ov := &Overrides{vals: map[string]string{}}
	def := Default()
	for _, f := range fieldList {
		path := f.Path
		fs.Func(f.Flag, f.flagUsage(def), func(s string) error {
			ov.vals[path] = s
			return nil
		})
	}
	return ov
}

// flagUsage is the help line of the field's flag: its meaning, the kind
// of value (the allowed values, a|b|c, for a field that takes one of a
// list), the YAML key, the environment variable and the default.
func (f Field) flagUsage(def *Config) string {
	d := f.text(def)
	if d == "" {
		d = "none"
	} else {
		d = fmt.Sprintf("%q", d)
	}
	ph := f.ph
	if f.value != "" {
		ph = f.value
	}
	if len(f.Values) > 0 {
		ph = strings.Join(f.Values, "|")
	}
	return fmt.Sprintf("%s\n(`%s`; YAML %s, env %s; default %s)", f.Help, ph, f.Path, f.Env, d)
}

// Set records a flag value for the field with the dotted path; it fails
// for an unknown path. Does not block.
func (o *Overrides) Set(path, value string) error {
	if _, ok := fieldByPath(path); !ok {
		return fmt.Errorf("%w: unknown field %q", ErrConfig, path)
	}
	if o.vals == nil {
		o.vals = map[string]string{}
	}
	o.vals[path] = value
	return nil
}

// Sources says where Load reads from. Every member may be zero.
type Sources struct {
	// File is the YAML file; "" reads none.
	File string
	// Lookup reads an environment variable (os.LookupEnv); nil reads none.
	Lookup func(string) (string, bool)
	// Flags are the command-line overrides; nil has none.
	Flags *Overrides
}

// Load builds a Config: Default, then the file, then the environment, then
// the flags. It does not validate (call Validate). Errors wrap ErrConfig
// and name the file and line, or the variable or flag, and the field. It
// blocks only on reading the file.
func Load(src Sources) (*Config, error) {
	c := Default()
	c.origins = map[string]string{}
	if src.File != "" {
		data, err := readLimited(src.File)
		if err != nil {
			return nil, err
		}
		if err := c.applyYAML(filepath.Base(src.File), data); err != nil {
			return nil, err
		}
	}
	if src.Lookup != nil {
		err := c.applyText(func(f Field) (string, string, bool) {
			v, ok := src.Lookup(f.Env)
			return v, "env " + f.Env, ok
		})
		if err != nil {
			return nil, err
		}
	}
	if src.Flags != nil {
		err := c.applyText(func(f Field) (string, string, bool) {
			v, ok := src.Flags.vals[f.Path]
			return v, "flag --" + f.Flag, ok
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// applyText sets every field that source gives a value, with the origin
// it names, in the order of the fields.
func (c *Config) applyText(source func(Field) (value, origin string, ok bool)) error {
	for _, f := range fieldList {
		v, origin, ok := source(f)
		if !ok {
			continue
		}
		if err := f.set(c, v); err != nil {
			return &FieldError{Field: f.Path, Value: v, Origin: origin, Reason: "bad value", Err: err}
		}
		c.origins[f.Path] = origin
	}
	return nil
}

// Origin says where the field with the dotted path got its value:
// "<file> line N", "env ZKGROUP_X", "flag --x" or "default". Safe for
// concurrent use; does not block.
func (c *Config) Origin(path string) string {
	if o, ok := c.origins[path]; ok {
		return o
	}
	return "default"
}

// knownEnv are ZKGROUP_ variables that are not fields: the config file
// and those the exec sink sets for its children.
var knownEnv = map[string]bool{
	"ZKGROUP_CONFIG": true, "ZKGROUP_TOPIC": true, "ZKGROUP_PARTITION": true,
	"ZKGROUP_OFFSET": true, "ZKGROUP_KEY": true, "ZKGROUP_KEY_ENCODING": true,
	"ZKGROUP_TIMESTAMP": true, "ZKGROUP_HEADERS": true, "ZKGROUP_GROUP_INSTANCE": true,
	"ZKGROUP_FIRST_OFFSET": true, "ZKGROUP_LAST_OFFSET": true, "ZKGROUP_COUNT": true,
}

// UnknownEnv returns the ZKGROUP_ variables in environ ("K=V" entries)
// that set no field, such as a misspelt ZKGROUP_GRUOP, for a warning.
// Pure; does not block.
func UnknownEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, EnvPrefix) || knownEnv[k] {
			continue
		}
		found := false
		for _, f := range fieldList {
			if f.Env == k {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}

// MaxFileSize bounds the config file: a complete annotated configuration
// is a few kilobytes, and YAML decoding cost grows faster than the size.
const MaxFileSize = 1 << 20

// readLimited reads the config file, refusing one over MaxFileSize
// without reading it whole.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the config file: %w", ErrConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the config file: %w", ErrConfig, err)
	}
	if len(data) > MaxFileSize {
		return nil, &FileError{File: filepath.Base(path), Msg: fmt.Sprintf("larger than %d bytes: not a zkgroup configuration", MaxFileSize)}
	}
	return data, nil
}
