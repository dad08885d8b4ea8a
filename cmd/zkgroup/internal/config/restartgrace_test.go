package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// TestRestartGrace: restart_grace from the file, ZKGROUP_RESTART_GRACE and
// --restart-grace reaches manager.Config.RestartGrace: the session timeout
// by default with instance_id, nothing without it, off and 0s turn it off,
// a duration is taken as it is.
func TestRestartGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		env   map[string]string
		flags []string
		want  time.Duration
	}{
		{"default with instance_id", "instance_id: a\nsession_timeout: 8s\n", nil, nil, 8 * time.Second},
		{"default without instance_id", "", nil, nil, 0},
		{"session_timeout spelled out", "instance_id: a\nrestart_grace: session_timeout\n", nil, nil, 10 * time.Second},
		{"off", "instance_id: a\nrestart_grace: off\n", nil, nil, 0},
		{"OFF", "instance_id: a\nrestart_grace: OFF\n", nil, nil, 0},
		{"0s", "instance_id: a\nrestart_grace: 0s\n", nil, nil, 0},
		{"bare 0", "instance_id: a\nrestart_grace: 0\n", nil, nil, 0},
		{"off without instance_id", "restart_grace: off\n", nil, nil, 0},
		{"duration", "instance_id: a\nrestart_grace: 45s\n", nil, nil, 45 * time.Second},
		{"the bound", "instance_id: a\nrestart_grace: 10m\n", nil, nil, manager.MaxRestartGrace},
		{"env", "instance_id: a\n", map[string]string{"ZKGROUP_RESTART_GRACE": "2m"}, nil, 2 * time.Minute},
		{"env off", "instance_id: a\n", map[string]string{"ZKGROUP_RESTART_GRACE": "off"}, nil, 0},
		{"flag over env", "instance_id: a\n", map[string]string{"ZKGROUP_RESTART_GRACE": "2m"}, []string{"--restart-grace", "30s"}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := consumer(t, load(t, validYAML+tc.yaml, tc.env, tc.flags...))
			if m.RestartGrace != tc.want {
				t.Errorf("RestartGrace %v, want %v", m.RestartGrace, tc.want)
			}
		})
	}
}

// TestRestartGraceRefused: a grace without instance_id, over the bound,
// negative or unreadable is a *FieldError naming restart_grace and where
// it was set.
func TestRestartGraceRefused(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"without instance_id", "restart_grace: 30s\n", nil, []string{"needs instance_id", "line"}},
		{"without instance_id, env", "", map[string]string{"ZKGROUP_RESTART_GRACE": "30s"}, []string{"needs instance_id", "env ZKGROUP_RESTART_GRACE"}},
		{"over the bound", "instance_id: a\nrestart_grace: 11m\n", nil, []string{"at most 10m"}},
		{"negative", "instance_id: a\nrestart_grace: -1s\n", nil, []string{"negative"}},
		{"unreadable", "instance_id: a\nrestart_grace: never\n", nil, []string{"a duration such as 30s", `"off"`}},
		{"a number without unit", "instance_id: a\nrestart_grace: 30\n", nil, []string{"a duration such as 30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := load(t, validYAML+tc.yaml, tc.env).Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "restart_grace" || !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want a *FieldError of restart_grace", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}
