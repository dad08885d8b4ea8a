package admin_test

import (
	"fmt"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/manager"
)

func ExampleNewStatus() {
	st := admin.NewStatus("orders", "v1", manager.Stats{Instance: "i1", Members: []string{"i1"}, Ready: true}, true)
	fmt.Println(st.Group, st.Instance, st.Ready, len(st.Members))
	// Output: orders i1 true 1
}
