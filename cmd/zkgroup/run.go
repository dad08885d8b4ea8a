package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

// cmdRun loads and validates the configuration, reads its passwords and
// TLS files, and runs the daemon, which checks that ZooKeeper and Kafka
// accept this client (preflight) before it joins, waiting for ZooKeeper
// while it does not answer (zookeeper_start_timeout). A bad configuration
// exits 2 before anything touches ZooKeeper; refused credentials or
// certificates exit 3.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stderr)
	load := configFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, path, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "zkgroup run: bad configuration: %v\n", err)
		if path == "" && errors.Is(err, config.ErrConfig) {
			fmt.Fprintln(stderr, "zkgroup run: (no --config given: settings come from defaults, ZKGROUP_* variables and flags)")
		}
		return exitUsage
	}
	// The passwords were read: keep them from the exec sink's children.
	secretVars := cfg.PasswordEnv()
	for _, v := range secretVars {
		_ = os.Unsetenv(v)
	}
	log := newLogger(cfg.Log, stderr)
	if unknown := unknownEnv(cfg); len(unknown) > 0 {
		log.Warn(unknownEnvWarning, "vars", strings.Join(unknown, ","))
	}
	if cfg.Kafka.SASL.Mechanism == config.SASLPlain && !cfg.Kafka.TLS.Enable {
		log.Warn("SASL PLAIN without TLS sends the password in clear text (kafka.tls.enable)")
	}
	routeSarama(log)
	return newDaemon(cfg, log, stdout, stderr).run()
}

// configFlags registers --config and the per-field flags on fs. The
// returned function, called after fs was parsed, loads the configuration
// (file, then ZKGROUP_* variables, then flags), validates it and reads
// the passwords and TLS files it names.
func configFlags(fs *flag.FlagSet) func() (cfg *config.Config, path string, err error) {
	file := fs.String("config", envDefault("ZKGROUP_CONFIG", ""), "YAML config file; every setting below may be set there\n(env ZKGROUP_CONFIG; default: none: defaults, ZKGROUP_* variables and flags)")
	ov := config.RegisterFlags(fs)
	return func() (*config.Config, string, error) {
		cfg, err := config.Load(config.Sources{File: *file, Lookup: os.LookupEnv, Flags: ov})
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			err = cfg.Resolve(os.LookupEnv)
		}
		return cfg, *file, err
	}
}

// unknownEnvWarning is what run and validate say of the ZKGROUP_*
// variables that set no field.
const unknownEnvWarning = "ignoring environment variables that set no field"

// unknownEnv lists the ZKGROUP_* variables of the environment that set no
// field (a misspelt ZKGROUP_SESION_TIMEOUT), but for those cfg reads a
// password from.
func unknownEnv(cfg *config.Config) []string {
	secretVars := cfg.PasswordEnv()
	return slices.DeleteFunc(config.UnknownEnv(os.Environ()), func(v string) bool { return slices.Contains(secretVars, v) })
}
