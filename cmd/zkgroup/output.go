package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// fail reports err on stderr (or as {"error": ...} on stdout with --json)
// and returns code.
func fail(stdout, stderr io.Writer, asJSON bool, code int, err error) int {
	if asJSON {
		_ = printJSON(stdout, map[string]any{"error": err.Error(), "exit_status": code})
	}
	fmt.Fprintf(stderr, "zkgroup: %v\n", err)
	return code
}

// newFlagSet returns the flag set of the subcommand name: its usage and
// errors go to stderr, and Parse returns them (see parseFlags).
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and turns -h and errors into exit statuses.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "zkgroup %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
}

// envDefault returns the environment variable's value, or def.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
