package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

// cmdRun loads and validates the configuration and runs the daemon. A bad
// configuration exits 2 before anything touches ZooKeeper.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, path, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "zkgroup run: bad configuration: %v\n", err)
		if path == "" && errors.Is(err, config.ErrInvalid) {
			fmt.Fprintln(stderr, "zkgroup run: (no --config given: settings come from defaults, ZKGROUP_* variables and flags)")
		}
		return exitUsage
	}
	log := newLogger(cfg.Log, stderr)
	if unknown := config.UnknownEnv(os.Environ()); len(unknown) > 0 {
		log.Warn("ignoring environment variables that set no field", "vars", strings.Join(unknown, ","))
	}
	routeSarama(log)
	return newDaemon(cfg, log, stdout, stderr).run()
}

// configFlags registers --config and the per-field flags on fs. The
// returned function, called after fs was parsed, loads the configuration
// (file, then ZKGROUP_* variables, then flags) and validates it.
func configFlags(fs *flag.FlagSet) func() (cfg *config.Config, path string, err error) {
	file := fs.String("config", envDefault("ZKGROUP_CONFIG", ""), "YAML config file (env ZKGROUP_CONFIG)")
	ov := config.RegisterFlags(fs)
	return func() (*config.Config, string, error) {
		cfg, err := config.Load(config.Sources{File: *file, Lookup: os.LookupEnv, Flags: ov})
		if err == nil {
			err = cfg.Validate()
		}
		return cfg, *file, err
	}
}
