package zkconn

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseConnect splits a connect string "host1:2181,host2:2181/chroot" into
// its servers and chroot ("" when there is none). A server without a port
// gets 2181. The chroot must start with "/" and must not end with "/".
// The error wraps no sentinel: callers check a configuration or an
// argument with it and wrap the result in ErrConfig (zkgroup.ErrConfig)
// once.
func ParseConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", errors.New("connect string: empty")
	}
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		}
		if strings.HasSuffix(chroot, "/") || strings.Contains(chroot, "//") {
			return nil, "", fmt.Errorf("connect string %q: chroot %q must not end with / or hold //", s, chroot)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("connect string %q: empty server", s)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: a bare host name or IPv4 address.
			if strings.ContainsAny(h, ":[]") {
				return nil, "", fmt.Errorf("connect string %q: server %q: %v", s, h, err)
			}
			host, port = h, "2181"
		}
		if host == "" {
			return nil, "", fmt.Errorf("connect string %q: server %q has no host", s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("connect string %q: server %q: port %q is not 1-65535", s, h, port)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, chroot, nil
}
