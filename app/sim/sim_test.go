package sim

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/lab/profile"
)

// The assembled simulation runs in the lab/flow and exercises integration
// tests (through app/apptest) and in the binary's tests; here only the
// refusals, which need no control plane.
func TestNewRefusesIncompleteConfig(t *testing.T) {
	p, _ := profile.Get("aws")
	full := Config{Profile: p, RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Nodes: 1}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no rest config", func(c *Config) { c.RestConfig = nil }, "RestConfig is required"},
		{"no profile", func(c *Config) { c.Profile = profile.Profile{} }, "Profile is required"},
		{"negative nodes", func(c *Config) { c.Nodes = -1 }, "Nodes must not be negative"},
		{"negative latency", func(c *Config) { c.CloudLatency = -1 }, "CloudLatency must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := full
			tc.mutate(&cfg)
			if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	s, err := New(context.Background(), full)
	if err != nil {
		t.Fatalf("New with a full config: %v", err)
	}
	if n := len(s.Cloud.Snapshot().Instances); n != 1 {
		t.Errorf("the cloud has %d instances, want the 1 asked for", n)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}
