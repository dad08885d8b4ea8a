package subscription_test

import (
	"fmt"

	"github.com/zkgroup/zkgroup/subscription"
)

func Example() {
	s, err := subscription.Parse(`whitelist: "orders.*, payments"`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	fmt.Println(s.Registration())
	fmt.Println(s.Filter([]string{"payments", "orders-eu", "audit", "__consumer_offsets", "orders"}))
	// Output:
	// whitelist:orders.*|payments
	// map[orders.*|payments:1]
	// [orders orders-eu payments]
}

func ExampleFromRegistration() {
	// Read from /consumers/<group>/ids/<id> of another member.
	s, err := subscription.FromRegistration("static", map[string]int{"b": 1, "a": 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	mine, _ := subscription.Static("a", "b")
	fmt.Println(s, s.Equal(mine))
	// Output: static:a,b true
}
