package dataplane

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func TestConfigValidate(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// A fake clientset: validation only needs a client to be there.
	client := fake.NewClientset()
	tests := []struct {
		name   string
		cfg    Config
		errHas []string
	}{
		{name: "nothing given", cfg: Config{}, errHas: []string{"client is required", "cloud is required"}},
		{name: "negative interval and buffer", cfg: Config{Client: client, Cloud: c, HealthCheckInterval: -time.Second, TraceBuffer: -1},
			errHas: []string{"interval -1s", "trace buffer -1"}},
		{name: "listen host not an IP", cfg: Config{Client: client, Cloud: c, ListenHost: "example.com"}, errHas: []string{"listen host"}},
		{name: "defaults", cfg: Config{Client: client, Cloud: c}},
		{name: "localhost", cfg: Config{Client: client, Cloud: c, ListenHost: "localhost"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.cfg)
			if len(tc.errHas) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if d.cfg.HealthCheckInterval != defaultHealthCheckInterval && tc.cfg.HealthCheckInterval == 0 {
					t.Errorf("interval default %s", d.cfg.HealthCheckInterval)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}
