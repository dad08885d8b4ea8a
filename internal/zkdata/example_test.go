package zkdata_test

import (
	"errors"
	"fmt"

	"github.com/zkgroup/zkgroup/internal/zkdata"
)

func Example() {
	data := []byte(`{"listener_security_protocol_map":{"SSL":"SSL","SASL_SSL":"SASL_SSL"},` +
		`"endpoints":["SSL://[2001:db8::1]:9093","SASL_SSL://[2001:db8::1]:9094"],` +
		`"rack":"r1","jmx_port":-1,"host":null,"timestamp":"1440000000000","port":-1,"version":4}`)
	b, err := zkdata.ParseBroker(3, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(zkdata.BrokerPath(b.ID), b.Rack)
	fmt.Println(b.Address("SSL"))
	_, err = b.Address("")
	fmt.Println(errors.Is(err, zkdata.ErrNoListener), err)

	_, err = zkdata.ParseBroker(3, []byte(`{"version":4,"endpoints":["PLAINTEXT://h:9092","FOO"]}`))
	fmt.Println(errors.Is(err, zkdata.ErrMalformed), err)
	// Output:
	// /brokers/ids/3 r1
	// [2001:db8::1]:9093 <nil>
	// true zkdata: broker 3: no PLAINTEXT listener and no host/port (available: SSL, SASL_SSL)
	// true zkdata: broker 3: endpoints[1] "FOO": no "://"
}

func ExampleMemberRegistration_Marshal() {
	m := zkdata.MemberRegistration{
		Version:      1,
		Pattern:      "static",
		Subscription: map[string]int{"topicB": 1, "topicA": 1},
		Timestamp:    1440000000000,
	}
	data, err := m.Marshal()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(zkdata.IDPath("group1", "group1_host-1440000000000-1a2b3c4d"))
	fmt.Println(string(data))
	// Output:
	// /consumers/group1/ids/group1_host-1440000000000-1a2b3c4d
	// {"version":1,"subscription":{"topicA":1,"topicB":1},"pattern":"static","timestamp":"1440000000000"}
}

func ExampleParseOffset() {
	next, err := zkdata.ParseOffset("orders", 0, []byte("1234\n"))
	fmt.Println(zkdata.OffsetPath("group1", "orders", 0), next, err)
	_, err = zkdata.ParseOffset("orders", 0, []byte("-1"))
	fmt.Println(err)
	// Output:
	// /consumers/group1/offsets/orders/0 1234 <nil>
	// zkdata: offset "orders"/0: "-1": negative
}
