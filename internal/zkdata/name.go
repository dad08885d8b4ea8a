package zkdata

import (
	"fmt"
	"strings"
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

// ValidatePath returns nil if p is an absolute ZooKeeper path ZooKeeper
// accepts, as its PathUtils.validatePath checks it: it starts with '/',
// does not end with '/' (but for "/" itself), and every segment between
// slashes passes ValidateNodeName (no empty segment, no "." or "..", no
// control or reserved characters). kind names the path in the error
// ("chroot"); the path is quoted clipped. The error wraps no sentinel (see
// ValidateNodeName). Pure, safe for concurrent use; does not block.
func ValidatePath(kind, p string) error {
	switch {
	case p == "/":
		return nil
	case p == "":
		return fmt.Errorf("%s: empty", kind)
	case p[0] != '/':
		return fmt.Errorf("%s %q: must start with /", kind, clip(p))
	case p[len(p)-1] == '/':
		return fmt.Errorf("%s %q: must not end with /", kind, clip(p))
	}
	for i, seg := range strings.Split(p[1:], "/") {
		if err := ValidateNodeName(fmt.Sprintf("%s %q: segment %d", kind, clip(p), i+1), seg); err != nil {
			return err
		}
	}
	return nil
}
