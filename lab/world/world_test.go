package world

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The assembled world runs in the lab/flow and exercises integration tests
// and in the binary's tests; here only the refusals.
func TestNewRefusesIncompleteConfig(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := profile.Get("aws")
	full := Config{Cloud: c, Profile: p, Client: fake.NewClientset(), RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no cloud", func(c *Config) { c.Cloud = nil }, "Cloud is required"},
		{"no client", func(c *Config) { c.Client = nil }, "Client is required"},
		{"no rest config", func(c *Config) { c.RestConfig = nil }, "RestConfig is required"},
		{"no profile", func(c *Config) { c.Profile = profile.Profile{} }, "Profile is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := full
			tc.mutate(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := New(full); err != nil {
		t.Fatalf("New with a full config: %v", err)
	}
}
