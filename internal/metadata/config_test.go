package metadata

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Config)
		fields []string // fields named in the error, none when valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"minimums", func(c *Config) {
			c.Resync, c.Debounce = time.Second, 0
		}, nil},
		{"short resync", func(c *Config) { c.Resync = 999 * time.Millisecond }, []string{"Resync"}},
		{"negative debounce", func(c *Config) { c.Debounce = -1 }, []string{"Debounce"}},
		{"zero value", func(c *Config) { *c = Config{} }, []string{"Resync"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConfig()
			tt.mod(&c)
			err := c.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate() = %v, want ErrConfig", err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
}

func TestNewConfigDefaults(t *testing.T) {
	c := NewConfig()
	if c.Resync != 60*time.Second || c.Debounce != 100*time.Millisecond {
		t.Fatalf("NewConfig() = %+v", c)
	}
}
