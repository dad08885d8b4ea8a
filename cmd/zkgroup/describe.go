package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
)

// cmdDescribe prints a group's partitions with the columns of
// kafka-consumer-groups --describe, then its members.
func cmdDescribe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g groupFlags
	g.register(fs, true)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := g.check(); err != nil {
		return fail(stdout, stderr, g.json, exitUsage, err)
	}
	c, err := g.connect(stderr)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	defer c.close()
	committed, err := c.committed(g.storage)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFailure, err)
	}
	d, err := ops.Describe(ops.DescribeInput{Session: c.sess, Committed: committed,
		LogEnd: ops.LogEndFunc(c.client), Group: g.group, Storage: g.storage})
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	if g.json {
		_ = printJSON(stdout, d)
		return exitOK
	}
	fmt.Fprint(stdout, d.Text())
	return exitOK
}
