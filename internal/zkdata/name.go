package zkdata

import (
	"fmt"
	"unicode/utf8"
)

// ValidateNodeName returns nil if name can be used as one ZooKeeper path
// component, such as a group or consumer id: non-empty, valid UTF-8, not "."
// or "..", without '/', and without the characters ZooKeeper refuses
// (control characters, U+D800..U+F8FF, U+FFF0..U+FFFF, and characters beyond
// U+FFFF, which Java holds as surrogates). kind names the component in the
// error ("group", "consumer id"). The error wraps no sentinel: callers
// validate a configuration or an argument with it and wrap the result in
// their package's ErrConfig (zkgroup.ErrConfig), once. It is pure, safe
// for concurrent use, and does not block.
func ValidateNodeName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s %q: empty", kind, name)
	case name == "." || name == "..":
		return fmt.Errorf("%s %q: reserved", kind, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s %q: invalid UTF-8", kind, clip(name))
	}
	for i, r := range name {
		if r == '/' || r <= 0x1f || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
			return fmt.Errorf("%s %q: character %U at byte %d not allowed",
				kind, clip(name), r, i)
		}
	}
	return nil
}
