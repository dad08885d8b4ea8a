package zkconn

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// maxHost is the longest host name a server may have (DNS: 253 bytes).
const maxHost = 253

// maxQuoted bounds how much of the connect string an error quotes.
const maxQuoted = 80

// ParseConnect splits a connect string "host1:2181,host2:2181/chroot" into
// its servers and chroot ("" when there is none). A server without a port
// gets 2181; a host is at most 253 bytes without spaces or control
// characters. The chroot must be a path ZooKeeper accepts (see
// zkdata.ValidatePath: no empty, "." or ".." segment, no control or
// reserved characters, no final "/"). Errors quote the input clipped.
// The error wraps no sentinel: callers check a configuration or an
// argument with it and wrap the result in ErrConfig (zkgroup.ErrConfig)
// once.
func ParseConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", errors.New("connect string: empty")
	}
	q := clipQuoted(s)
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		}
		if chroot != "" {
			if err := zkdata.ValidatePath("chroot", chroot); err != nil {
				return nil, "", fmt.Errorf("connect string %s: %w", q, err)
			}
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("connect string %s: empty server", q)
		}
		hq := clipQuoted(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: a bare host name or IPv4 address.
			if strings.ContainsAny(h, ":[]") {
				return nil, "", fmt.Errorf("connect string %s: server %s: not host:port", q, hq)
			}
			host, port = h, "2181"
		}
		switch {
		case host == "":
			return nil, "", fmt.Errorf("connect string %s: server %s has no host", q, hq)
		case len(host) > maxHost:
			return nil, "", fmt.Errorf("connect string %s: server %s: host of %d bytes (at most %d)", q, hq, len(host), maxHost)
		case strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return nil, "", fmt.Errorf("connect string %s: server %s: host holds a space or control character", q, hq)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("connect string %s: server %s: port %s is not 1-65535", q, hq, clipQuoted(port))
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, chroot, nil
}

// clipQuoted quotes s (Go syntax, so that control characters show
// escaped), cut to maxQuoted bytes of input with "..." marking a cut.
func clipQuoted(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuoted]) + "..."
}
