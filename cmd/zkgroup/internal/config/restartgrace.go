package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// RestartGraceD returns the restart grace the member runs with
// (manager.Config.RestartGrace): 0 without instance_id, and for
// RestartGraceOff or a zero duration; SessionTimeout for
// RestartGraceSessionTimeout; else the duration. It fails, wrapping
// ErrConfig, for text that is none of these. Pure.
func (c *Config) RestartGraceD() (time.Duration, error) {
	d, _, err := c.restartGrace()
	if err != nil || c.InstanceID == "" {
		return 0, err
	}
	return d, nil
}

// restartGrace parses RestartGrace: the grace it says (SessionTimeout for
// RestartGraceSessionTimeout), and whether it is a duration of its own
// above zero (which needs instance_id).
func (c *Config) restartGrace() (d time.Duration, explicit bool, err error) {
	s := strings.TrimSpace(c.RestartGrace)
	switch strings.ToLower(s) {
	case RestartGraceSessionTimeout, "":
		return c.SessionTimeout.D(), false, nil
	case RestartGraceOff:
		return 0, false, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("%w: restart_grace: %q is not a duration such as 30s, %q or %q", ErrConfig, s, RestartGraceOff, RestartGraceSessionTimeout)
	}
	return d, d > 0, nil
}

func (c *Config) checkRestartGrace() error {
	d, explicit, err := c.restartGrace()
	switch {
	case err != nil:
		return c.bad("restart_grace", fmt.Sprintf("must be a duration such as 30s, %q (or 0s) or %q", RestartGraceOff, RestartGraceSessionTimeout), nil)
	case d < 0:
		return c.bad("restart_grace", fmt.Sprintf("must not be negative (%q or 0s: no grace)", RestartGraceOff), nil)
	case d > manager.MaxRestartGrace:
		return c.bad("restart_grace", "must be at most "+shortDuration(manager.MaxRestartGrace)+" (the partitions of a member that stopped for good stay unconsumed that long)", nil)
	case explicit && c.InstanceID == "":
		return c.bad("restart_grace", "needs instance_id: a restarted instance finds its partitions by its id (without one, set "+RestartGraceOff+" or leave it out)", nil)
	}
	return nil
}

// shortDuration is d without trailing zero units: "10m", not "10m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	for strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
