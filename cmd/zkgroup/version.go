package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildInfo describes the binary.
type buildInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Revision  string `json:"vcs_revision,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	Sarama    string `json:"sarama,omitempty"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
		for _, m := range bi.Deps {
			if m.Path == "github.com/IBM/sarama" {
				b.Sarama = m.Version
			}
		}
	}
	return b
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stderr)
	asJSON := fs.Bool("json", false, "print as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	b := readBuildInfo()
	if *asJSON {
		_ = printJSON(stdout, b)
		return exitOK
	}
	fmt.Fprintf(stdout, "zkgroup %s (%s, %s", b.Version, b.GoVersion, b.Platform)
	if b.Revision != "" {
		fmt.Fprintf(stdout, ", revision %.12s", b.Revision)
		if b.Modified {
			fmt.Fprint(stdout, "+dirty")
		}
	}
	fmt.Fprintln(stdout, ")")
	return exitOK
}
