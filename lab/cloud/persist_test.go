package cloud

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPersistenceRoundTrip(t *testing.T) {
	for _, mode := range []string{IngressHostname, IngressIP} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "cloud", "state.json") // directory created on demand
			cfg := Config{StatePath: path, IngressMode: mode}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxAs("user")
			running := mustRun(t, c, RunInstanceInput{Tags: map[string]string{"k": "v"}})
			stopped := mustRun(t, c, RunInstanceInput{InstanceType: "t3.small"})
			gone := mustRun(t, c, RunInstanceInput{})
			for _, err := range []error{
				c.CreateRoute(ctx, "10.244.2.0/24", gone.ID), // a blackhole once gone terminates
				func() error { _, err := c.StopInstance(ctx, stopped.ID); return err }(),
				func() error { _, err := c.TerminateInstance(ctx, gone.ID); return err }(),
				func() error {
					_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Port: 80, TargetPort: 30080}}})
					return err
				}(),
				c.RegisterTargets(ctx, "web", []Target{{ID: running.ID, Port: 30080}, {ID: stopped.ID, Port: 30080}}),
				c.ConfigureHealthCheck(ctx, "web", HealthCheck{Protocol: "HTTP", Port: 10256, Path: "/healthz"}),
				c.CreateRoute(ctx, "10.244.1.0/24", running.ID),
				c.SetFaults(Faults{Deny: []string{ActionCreateRoute}}),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := c.SetTargetHealth("web", running.ID, 30080, TargetHealthy, ""); err != nil {
				t.Fatal(err)
			}
			want := c.Snapshot()
			lastSeq := lastCall(t, c).Seq
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}

			// Health was observed by a checker that is gone now.
			for i, tg := range want.LoadBalancers[0].Targets {
				if tg.ID == running.ID {
					want.LoadBalancers[0].Targets[i].Health = TargetInitial
					want.LoadBalancers[0].Targets[i].Reason = reasonRegistering
				}
			}

			c2 := newTestCloud(t, func(c *Config) { *c = cfg })
			if got := c2.Snapshot(); !reflect.DeepEqual(got, want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(want, "", " ")
				t.Fatalf("restored state differs:\n got %s\nwant %s", gj, wj)
			}
			// Faults are saved state: the deny is still in force.
			if f := c2.Faults(); !reflect.DeepEqual(f.Deny, []string{ActionCreateRoute}) {
				t.Fatalf("faults after a restart: %+v", f)
			}
			if err := c2.SetFaults(Faults{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c2.DescribeRouteTable(ctx); err != nil {
				t.Fatal(err)
			}
			if seq := lastCall(t, c2).Seq; seq != lastSeq+1 {
				t.Fatalf("call Seq after restart = %d, want %d", seq, lastSeq+1)
			}
			// Restored addresses are taken: a new instance gets a fresh IP
			// and DNS name, and a new LB a different address.
			inst := mustRun(t, c2, RunInstanceInput{Zone: running.Zone})
			for _, old := range want.Instances {
				if inst.PrivateIP == old.PrivateIP {
					t.Fatalf("IP %s reused after restart", inst.PrivateIP)
				}
			}
			if lb := mustCreateLB(t, c2, CreateLoadBalancerInput{Name: "api"}); mode == IngressIP && lb.IP == want.LoadBalancers[0].IP {
				t.Fatalf("LB IP %s reused after restart", lb.IP)
			}

			if err := c2.Close(); err != nil { // stop background writes before looking
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Fatalf("leftover files next to the state file: %v", entries)
			}
		})
	}
}

func TestPersistenceInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	c := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	inst := mustRun(t, c, RunInstanceInput{})
	waitFor(t, "background flush", func() bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(b), inst.ID)
	})
	// Reads do not mark state dirty. Only a mark makes the background
	// writer rewrite the file, so the mark itself is what is checked, with
	// the writer stopped so that it cannot take the mark away first: no
	// waiting for a flush that must not happen.
	c.store.stop()
	select {
	case <-c.store.dirty: // a mark left from RunInstances
	default:
	}
	for range 5 {
		if _, err := c.DescribeInstances(ctxAs("user"), DescribeInstancesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.store.dirty) != 0 {
		t.Fatal("read-only calls marked the state dirty: the state file would be rewritten")
	}
	// The same mark, made by a mutation, is seen: the check above can fail.
	mustRun(t, c, RunInstanceInput{})
	if len(c.store.dirty) != 1 {
		t.Fatal("RunInstances did not mark the state dirty")
	}
}

func TestLoadErrors(t *testing.T) {
	valid := func(t *testing.T, path string) {
		c, err := New(Config{StatePath: path})
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, c, RunInstanceInput{})
		mustCreateLB(t, c, CreateLoadBalancerInput{Name: "web"})
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		cfg     Config
		wantErr string
	}{
		{"not JSON", func(t *testing.T, path string) { os.WriteFile(path, []byte("{not json"), 0o644) }, Config{}, "is corrupt"},
		{"empty file", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o644) }, Config{}, "is corrupt"},
		{"truncated", func(t *testing.T, path string) {
			valid(t, path)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o644)
		}, Config{}, "is corrupt"},
		{"future version", func(t *testing.T, path string) { os.WriteFile(path, []byte(`{"version":9}`), 0o644) }, Config{}, "version 9"},
		{"other VPC", valid, Config{VPCCIDR: "172.16.0.0/16"}, "outside the usable range"},
		{"other zones", valid, Config{Zones: []string{"us-east-1a"}}, `not one of us-east-1a`},
		{"bad instance ID", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"version":1,"instances":[{"id":"vm-1","zone":"ap-northeast-1a","privateIP":"10.0.0.4","state":"running"}]}`), 0o644)
		}, Config{}, `instance ID "vm-1" is malformed`},
		{"duplicate LB", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"version":1,"loadBalancers":[{"name":"a","targetType":"instance"},{"name":"a","targetType":"instance"}]}`), 0o644)
		}, Config{}, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			tt.prepare(t, path)
			cfg := tt.cfg
			cfg.StatePath = path
			c, err := New(cfg)
			if err == nil {
				c.Close()
				t.Fatal("New accepted a bad state file")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q should name the file and contain %q", err, tt.wantErr)
			}
		})
	}
}
