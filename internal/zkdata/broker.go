package zkdata

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Plaintext is the listener name and security protocol of Kafka's
// unencrypted, unauthenticated listener.
const Plaintext = "PLAINTEXT"

// Broker is a decoded /brokers/ids/<id> node. It is a plain value; copies
// share the Endpoints slice and SecurityProtocols map, so treat them as
// read-only when sharing between goroutines.
type Broker struct {
	ID   int32
	Host string // legacy PLAINTEXT host; "" when the JSON has null
	Port int    // legacy PLAINTEXT port; -1 when absent
	// Endpoints lists the advertised listeners in registration order. For an
	// old registration with no "endpoints" it holds one PLAINTEXT endpoint
	// built from Host and Port.
	Endpoints []Endpoint
	// SecurityProtocols maps listener name to security protocol, from
	// "listener_security_protocol_map"; nil when absent.
	SecurityProtocols map[string]string
	Rack              string // "" when absent or null
	Version           int
}

// Endpoint is one advertised listener, decoded from "LISTENER://host:port".
// Host has no brackets, even for IPv6. It is a plain value, safe for
// concurrent use; its String method does not block.
type Endpoint struct {
	Listener string
	Host     string
	Port     int
}

// String formats e as Kafka writes it: "LISTENER://host:port", with IPv6
// hosts in brackets.
func (e Endpoint) String() string {
	return e.Listener + "://" + e.addr()
}

// addr returns host:port, bracketing IPv6 hosts.
func (e Endpoint) addr() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

type brokerJSON struct {
	Version     int               `json:"version"`
	Host        string            `json:"host"`
	Port        *int              `json:"port"`
	Endpoints   []string          `json:"endpoints"`
	ProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Rack        string            `json:"rack"`
}

// ParseBroker decodes the data of /brokers/ids/<id>. Unknown fields (jmx_port,
// timestamp, features, ...) are ignored. Each endpoint must be
// "LISTENER://host:port" with a non-empty listener and host and a port in
// 1..65535; the legacy port must be -1..65535; and the broker must have at
// least one endpoint or a legacy host and port. Errors wrap ErrMalformed and
// name the broker and field. It is pure, safe for concurrent use, and does
// not block.
func ParseBroker(id int32, data []byte) (Broker, error) {
	node := "broker " + strconv.FormatInt(int64(id), 10)
	var raw brokerJSON
	if err := decodeObject(node, data, &raw); err != nil {
		return Broker{}, err
	}
	b := Broker{
		ID:                id,
		Host:              raw.Host,
		Port:              -1,
		SecurityProtocols: raw.ProtocolMap,
		Rack:              raw.Rack,
		Version:           raw.Version,
	}
	if raw.Port != nil {
		b.Port = *raw.Port
	}
	if b.Port < -1 || b.Port > 65535 {
		return Broker{}, malformed(node, "port", strconv.Itoa(b.Port), "out of range -1..65535")
	}
	for i, s := range raw.Endpoints {
		e, reason := parseEndpoint(s)
		if reason != "" {
			return Broker{}, malformed(node, fmt.Sprintf("endpoints[%d]", i), s, reason)
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	if len(b.Endpoints) == 0 {
		if b.Host == "" || b.Port <= 0 {
			return Broker{}, malformed(node, "endpoints", "", "no endpoints and no legacy host and port")
		}
		b.Endpoints = []Endpoint{{Listener: Plaintext, Host: b.Host, Port: b.Port}}
	}
	return b, nil
}

// parseEndpoint decodes "LISTENER://host:port". IPv6 hosts may be bracketed
// ("[::1]:9092") or, as Kafka's own parser allows, bare ("::1:9092", split at
// the last colon). It returns a reason when s is malformed.
func parseEndpoint(s string) (Endpoint, string) {
	if s == "" {
		return Endpoint{}, "empty"
	}
	listener, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Endpoint{}, `no "://"`
	}
	if listener == "" {
		return Endpoint{}, "empty listener name"
	}
	var host, port string
	if strings.HasPrefix(rest, "[") {
		var err error
		if host, port, err = net.SplitHostPort(rest); err != nil {
			return Endpoint{}, "bad bracketed host: " + err.Error()
		}
	} else {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return Endpoint{}, "no port"
		}
		host, port = rest[:i], rest[i+1:]
	}
	if host == "" {
		return Endpoint{}, "empty host"
	}
	for i := 0; i < len(host); i++ {
		if !hostByte(host[i]) {
			return Endpoint{}, fmt.Sprintf("character %q not allowed in host", host[i])
		}
	}
	n, reason := parseID(port)
	if reason != "" || n < 1 || n > 65535 {
		return Endpoint{}, fmt.Sprintf("port %q not in 1..65535", port)
	}
	return Endpoint{Listener: listener, Host: host, Port: int(n)}, ""
}

// hostByte reports whether c may appear in an advertised host: the
// characters Kafka's endpoint parser accepts (letters, digits, "-%._:").
func hostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '%' || c == '.' || c == '_' || c == ':'
}
