package config_test

import (
	"flag"
	"fmt"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

func Example() {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	ov := config.RegisterFlags(fs)
	_ = fs.Parse([]string{"--group", "orders", "--zookeeper", "zk:2181/kafka", "--subscription", "static:orders", "--session-timeout", "3s"})
	env := map[string]string{"ZKGROUP_PARTITION_MAX_UNACKED": "100"}
	c, err := config.Load(config.Sources{
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Flags:  ov,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Group, c.Partition.MaxUnacked, c.Origin("partition.max_unacked"))
	fmt.Println(c.Validate())
	// Output:
	// orders 100 env ZKGROUP_PARTITION_MAX_UNACKED
	// config: session_timeout: must be at least 6s (value "3s", from flag --session-timeout)
}
