package controlplane

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"defaults are valid", func(*Config) {}, ""},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "data dir is required"},
		{"bad service CIDR", func(c *Config) { c.ServiceCIDR = "10.96.0.0/99" }, "service CIDR"},
		{"mask not longer than cluster", func(c *Config) { c.NodeCIDRMaskSize = 14 }, "must be longer"},
		{"grace too short", func(c *Config) { c.NodeMonitorGracePeriod = time.Second }, "too short"},
		{"etcd quota below the floor", func(c *Config) { c.EtcdQuotaBytes = 1 << 20 }, "etcd quota 1048576 bytes must be between"},
		{"etcd quota above etcd's maximum", func(c *Config) { c.EtcdQuotaBytes = 9 << 30 }, "must be between 16777216 (16 MiB) and 8589934592 (8 GiB)"},
		{"negative disk reserve", func(c *Config) { c.EtcdDiskReserve = -1 }, "must not be negative"},
		{"space check too often", func(c *Config) { c.EtcdSpaceCheck = time.Millisecond }, "between 100ms and 1m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{DataDir: "/tmp/x"}
			c.Defaults()
			tt.mutate(&c)
			err := c.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// The chapter's point about the controller-manager, kept as a test so it
// cannot silently drift.
func TestControllerManagerRunsWithExternalCloudProvider(t *testing.T) {
	cp := &ControlPlane{cfg: Config{DataDir: "/tmp/x"}, pki: pki{dir: "/tmp/x/pki"}}
	cp.cfg.Defaults()
	args := strings.Join(cp.controllerManagerArgs(), " ")
	for _, want := range []string{"--cloud-provider=external", "--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/14", "--node-monitor-grace-period=10s"} {
		if !strings.Contains(args, want) {
			t.Errorf("controller-manager args lack %s: %s", want, args)
		}
	}
}

// The lab never sends a packet off loopback, nor asks a DNS server: the
// apiserver reaches kubelets by IP (TestLoopbackOnly in cmd/ccmlab runs the
// whole lab without a network).
func TestAPIServerDialsKubeletsByIP(t *testing.T) {
	cp := &ControlPlane{cfg: Config{DataDir: "/tmp/x"}, pki: pki{dir: "/tmp/x/pki"}}
	cp.cfg.Defaults()
	args := cp.apiserverArgs("http://127.0.0.1:2379")
	want := "--kubelet-preferred-address-types=InternalIP,ExternalIP"
	if !slices.Contains(args, want) {
		t.Errorf("apiserver args lack %s: %s", want, strings.Join(args, " "))
	}
}

// On a disk that is already nearly full etcd would end the process at its
// first write; Start says so instead and starts nothing.
func TestStartRefusesANearlyFullDisk(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), diskFree: func(string) (int64, error) { return 10 << 20, nil }}
	_, err := Start(context.Background(), cfg)
	want := "has 10.0 MiB free; etcd needs 64.0 MiB to start: free some disk space"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start = %v, want an error saying %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "etcd")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("etcd's data dir: %v, want none", err)
	}
}
