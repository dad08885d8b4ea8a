package zkconn

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConnect(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2/kafka", servers: []string{"a:1", "b:2"}, chroot: "/kafka"},
		{in: "a,b/x/y", servers: []string{"a:2181", "b:2181"}, chroot: "/x/y"},
		{in: "[::1]:2181/k", servers: []string{"[::1]:2181"}, chroot: "/k"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "", bad: true},
		{in: "a:1,,b:2", bad: true},
		{in: "a:0", bad: true},
		{in: "a:99999", bad: true},
		{in: "a:x", bad: true},
		{in: "a:1/kafka/", bad: true},
		{in: "a:1//k", bad: true},
		{in: ":1", bad: true},
		{in: "a:1/a/../b", bad: true},
		{in: "a:1/a/./b", bad: true},
		{in: "a:1/.", bad: true},
		{in: "a:1/a\x00b", bad: true},
		{in: "a:1/a\x01b", bad: true},
		{in: "a:1/a\u0085b", bad: true},
		{in: "a:1/\ue000", bad: true},
		{in: "a:1/\uffff", bad: true},
		{in: "a\x00b:1", bad: true},
		{in: "a b:1/k", bad: true},
		{in: strings.Repeat("h", 1<<20) + ":2181/k", bad: true},
		{in: "a:1/" + strings.Repeat("k", 1<<20) + "/..", bad: true},
	} {
		servers, chroot, err := ParseConnect(tc.in)
		if tc.bad {
			if err == nil || !strings.HasPrefix(err.Error(), "connect string") || len(err.Error()) > 400 {
				t.Errorf("ParseConnect(%.40q) err = %.400v, want a short error about the connect string", tc.in, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(servers, tc.servers) || chroot != tc.chroot {
			t.Errorf("ParseConnect(%q) = %v, %q, %v; want %v, %q", tc.in, servers, chroot, err, tc.servers, tc.chroot)
		}
	}
}

// TestConfigChroot: Config.Validate refuses a chroot ZooKeeper would
// refuse (go-zookeeper answers "zk: invalid path" for every request),
// naming the field.
func TestConfigChroot(t *testing.T) {
	for _, chroot := range []string{"/a/../b", "/.", "/a\x00", "/a\nb", "k", "/k/"} {
		err := Config{Servers: []string{"x:1"}, SessionTimeout: time.Second, Chroot: chroot}.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Chroot") {
			t.Errorf("Chroot %q: Validate = %v", chroot, err)
		}
	}
	if err := (Config{Servers: []string{"x:1"}, SessionTimeout: time.Second, Chroot: "/a/b"}).Validate(); err != nil {
		t.Errorf("Chroot /a/b: %v", err)
	}
}

func FuzzParseConnect(f *testing.F) {
	for _, s := range []string{"a:1,b:2/k", "[::1]:2181", "", "/", "a//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		servers, chroot, err := ParseConnect(s)
		if err != nil {
			return
		}
		if len(servers) == 0 {
			t.Fatalf("no servers and no error for %q", s)
		}
		if chroot != "" && (chroot[0] != '/' || chroot[len(chroot)-1] == '/') {
			t.Fatalf("bad chroot %q from %q", chroot, s)
		}
	})
}
