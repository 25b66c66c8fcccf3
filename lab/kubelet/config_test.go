package kubelet

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
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok with defaults", Config{Client: client, Cloud: c}, ""},
		{"no client", Config{Cloud: c}, "client: required"},
		{"no cloud", Config{Client: client}, "cloud: required"},
		{"negative interval", Config{Client: client, Cloud: c, HeartbeatInterval: -time.Second}, "heartbeat interval -1s"},
		{"negative workers", Config{Client: client, Cloud: c, PodWorkers: -1}, "pod workers -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.HeartbeatInterval != 2500*time.Millisecond || cfg.NodeStatusInterval != 5*time.Minute || cfg.Clock == nil || cfg.Logger == nil {
					t.Errorf("defaults not applied: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New accepted an empty config")
	}
}
