package main

import (
	"fmt"
	"io"
	"os"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitRefused: a server refused the credentials or the client
	// certificate, or the server's certificate did not verify.
	exitRefused = 3
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage: zkgroup <command> [flags]

commands:
  run          run the consumer daemon (--config FILE)
  validate     check a configuration file (--connect: and the servers it names)
  describe     show a group's members, owners, offsets and lag
  offsets      reset or migrate a group's committed offsets
  leave        give up the partitions a stopped member (instance_id, restart_grace) keeps
  healthcheck  probe a daemon's /healthz (for container health checks)
  version      print the version

"zkgroup <command> -h" shows a command's flags.
`

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	rest := args[1:]
	switch args[0] {
	case "run":
		return cmdRun(rest, stdout, stderr)
	case "validate":
		return cmdValidate(rest, stdout, stderr)
	case "describe":
		return cmdDescribe(rest, stdout, stderr)
	case "offsets":
		return cmdOffsets(rest, stdout, stderr)
	case "leave":
		return cmdLeave(rest, stdout, stderr)
	case "healthcheck":
		return cmdHealthcheck(rest, stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "zkgroup: unknown command %q\n\n%s", args[0], usageText)
	return exitUsage
}
