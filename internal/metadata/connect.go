package metadata

import (
	"net"
	"strconv"
	"strings"
	"unicode"
)

// parseConnect splits a connect string "h1:2181,h2:2181/chroot" into its
// servers and chroot ("" for none; "/" alone also means none). Servers
// without a port are kept as they are (the client adds 2181). It is pure.
func parseConnect(s string) (servers []string, chroot string, err error) {
	bad := func(part, reason string) ([]string, string, error) {
		return nil, "", &ConnectError{Connect: s, Part: part, Reason: reason}
	}
	if s == "" {
		return bad("", "empty")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return bad("", "contains white space or control characters")
		}
	}
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
	}
	if chroot == "/" {
		chroot = ""
	}
	if chroot != "" {
		if strings.HasSuffix(chroot, "/") {
			return bad(chroot, "chroot must not end with /")
		}
		for _, seg := range strings.Split(chroot[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				return bad(chroot, "chroot has an empty, . or .. segment")
			}
		}
	}
	if hosts == "" {
		return bad("", "no servers")
	}
	for _, h := range strings.Split(hosts, ",") {
		if err := checkServer(h); err != "" {
			return bad(h, err)
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}

// checkServer returns why h is not "host" or "host:port", or "".
func checkServer(h string) string {
	if h == "" {
		return "empty server"
	}
	if !strings.Contains(h, ":") {
		return ""
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return "not host:port"
	}
	if host == "" {
		return "empty host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "port must be 1 to 65535"
	}
	return ""
}
