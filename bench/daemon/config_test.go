package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// daemonConfig is what a zkgroup side sets in its config file; the rest
// are the daemon's defaults.
type daemonConfig struct {
	group, zookeeper, topic string
	sink                    string   // stdout, http or exec
	mode                    string   // sink.<http|exec>.mode; empty: not set (the daemon's default)
	url                     string   // sink.http.url
	command                 []string // sink.exec.command
	commitInterval          string   // partition.commit_interval; empty: default
}

// yaml renders c as a config file for `zkgroup run --config`. The admin
// server is off (no port to share between passes).
func (c daemonConfig) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group: %q\nzookeeper: %q\nsubscription: %q\n", c.group, c.zookeeper, "static:"+c.topic)
	b.WriteString("admin:\n  listen: \"\"\n")
	if c.commitInterval != "" {
		fmt.Fprintf(&b, "partition:\n  commit_interval: %s\n", c.commitInterval)
	}
	fmt.Fprintf(&b, "sink:\n  type: %s\n", c.sink)
	switch c.sink {
	case "http":
		fmt.Fprintf(&b, "  http:\n    url: %q\n", c.url)
		if c.mode != "" {
			fmt.Fprintf(&b, "    mode: %s\n", c.mode)
		}
	case "exec":
		b.WriteString("  exec:\n    command: [")
		for i, a := range c.command {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", a)
		}
		b.WriteString("]\n")
		if c.mode != "" {
			fmt.Fprintf(&b, "    mode: %s\n", c.mode)
		}
	}
	return b.String()
}

// write puts c's file at path.
func (c daemonConfig) write(path string) error { return os.WriteFile(path, []byte(c.yaml()), 0o644) }

// validate runs `zkgroup validate --config path` (no connection): nil
// when the daemon accepts the file, else its complaint.
func validate(bin, path string, env []string) error {
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("zkgroup validate: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// childEnv is this process's environment without ZKGROUP_* variables
// (which the daemon would read as settings, or warn about).
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZKGROUP_") {
			out = append(out, kv)
		}
	}
	return out
}
