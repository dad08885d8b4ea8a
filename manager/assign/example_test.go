package assign_test

import (
	"fmt"

	"github.com/zkgroup/zkgroup/manager/assign"
)

func Example() {
	members := []assign.Member{
		{ID: "consumer-b"},
		{ID: "consumer-a", Topics: []string{"orders"}},
	}
	partitions := []assign.Partition{
		{Topic: "orders", ID: 0, Leader: 1},
		{Topic: "orders", ID: 1, Leader: 2},
		{Topic: "orders", ID: 2, Leader: 1},
		{Topic: "orders", ID: 3, Leader: 2},
		{Topic: "audit", ID: 0, Leader: -1},
	}
	strategy, err := assign.ByName("leader-aware")
	if err != nil {
		panic(err)
	}
	a := strategy(members, partitions)
	for _, id := range []string{"consumer-a", "consumer-b"} {
		fmt.Println(id, a[id])
	}
	owner, _ := a.Owner("audit", 0)
	fmt.Println("audit/0 ->", owner)

	_, err = assign.ByName("random")
	fmt.Println(err)
	// Output:
	// consumer-a [{orders 0 1 } {orders 1 2 } {orders 2 1 }]
	// consumer-b [{audit 0 -1 } {orders 3 2 }]
	// audit/0 -> consumer-b
	// assign: unknown strategy "random" (valid: range, roundrobin, leader-aware, sticky)
}
