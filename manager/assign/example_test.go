package assign_test

import (
	"fmt"
	"strings"

	"github.com/zkgroup/zkgroup/manager/assign"
)

// show renders partitions as "topic/id ...".
func show(ps []assign.Partition) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%s/%d", p.Topic, p.ID)
	}
	return strings.Join(s, " ")
}

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
	strategy, err := assign.ByName(assign.DefaultName)
	if err != nil {
		panic(err)
	}
	a := strategy.Assign(members, partitions)
	for _, id := range []string{"consumer-a", "consumer-b"} {
		fmt.Println(id, show(a[id]))
	}
	owner, _ := a.Owner("audit", 0)
	fmt.Println("audit/0 ->", owner)

	_, err = assign.ByName("random")
	fmt.Println(err)
	// Output:
	// consumer-a orders/0 orders/2
	// consumer-b audit/0 orders/1 orders/3
	// audit/0 -> consumer-b
	// assign: unknown strategy "random" (valid: balanced, range, roundrobin, leader-aware, sticky)
}

// A fourth member joins three that share 12 partitions: each of the three
// hands over one partition, so 3 = 12/4 partitions move.
func ExampleBalanced() {
	var partitions []assign.Partition
	for id := range 12 {
		partitions = append(partitions, assign.Partition{Topic: "orders", ID: int32(id), Leader: int32(id % 3)})
	}
	members := []assign.Member{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	before := assign.Balanced().Assign(members, partitions)

	// Every member reads the current claims from ZooKeeper into Owner.
	for i, p := range partitions {
		partitions[i].Owner, _ = before.Owner(p.Topic, p.ID)
	}
	members = append(members, assign.Member{ID: "d"})
	after := assign.Balanced().Assign(members, partitions)

	moved := 0
	for _, p := range partitions {
		if owner, _ := after.Owner(p.Topic, p.ID); owner != p.Owner {
			fmt.Printf("%s/%d: %s -> %s\n", p.Topic, p.ID, p.Owner, owner)
			moved++
		}
	}
	fmt.Println("moved:", moved)
	for _, m := range members {
		fmt.Println(m.ID, show(after[m.ID]))
	}
	// Output:
	// orders/9: a -> d
	// orders/10: b -> d
	// orders/11: c -> d
	// moved: 3
	// a orders/0 orders/3 orders/6
	// b orders/1 orders/4 orders/7
	// c orders/2 orders/5 orders/8
	// d orders/9 orders/10 orders/11
}
