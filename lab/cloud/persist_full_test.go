package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/datafs"
)

// TestSyncSaveOnFullDisk: a student's instance call on a full disk fails
// with the disk's error and changes nothing, in memory or on disk; once
// space is freed the same call is on disk before it returns, and the
// background writer's error clears by itself.
func TestSyncSaveOnFullDisk(t *testing.T) {
	readState := func(t *testing.T, path string) stateFile {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f stateFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	stateOf := func(f stateFile, id string) InstanceState {
		for _, inst := range f.Instances {
			if inst.ID == id {
				return inst.State
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name string
		// prepare returns the instance the call acts on ("" for a launch).
		prepare func(t *testing.T, c *Cloud, lbTarget Instance) string
		call    func(ctx context.Context, c *Cloud, id string) (Instance, error)
		want    InstanceState
	}{
		{
			name: "launch",
			call: func(ctx context.Context, c *Cloud, _ string) (Instance, error) {
				return c.RunInstance(ctx, RunInstanceInput{})
			},
			want: InstanceRunning,
		},
		{
			name:    "stop",
			prepare: func(_ *testing.T, _ *Cloud, target Instance) string { return target.ID },
			call:    func(ctx context.Context, c *Cloud, id string) (Instance, error) { return c.StopInstance(ctx, id) },
			want:    InstanceStopped,
		},
		{
			name: "start",
			prepare: func(t *testing.T, c *Cloud, target Instance) string {
				if _, err := c.StopInstance(ctxAs("user"), target.ID); err != nil {
					t.Fatal(err)
				}
				return target.ID
			},
			call: func(ctx context.Context, c *Cloud, id string) (Instance, error) { return c.StartInstance(ctx, id) },
			want: InstanceRunning,
		},
		{
			name:    "terminate",
			prepare: func(_ *testing.T, _ *Cloud, target Instance) string { return target.ID },
			call:    func(ctx context.Context, c *Cloud, id string) (Instance, error) { return c.TerminateInstance(ctx, id) },
			want:    InstanceTerminated,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &datafs.Switch{}
			path := filepath.Join(t.TempDir(), "cloud.json")
			c := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path; cfg.Files = disk })
			target := mustRun(t, c, RunInstanceInput{})
			mustCreateLB(t, c, CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Port: 80, TargetPort: 30080}}})
			if err := c.RegisterTargets(ctxAs("service-controller"), "web", []Target{{ID: target.ID, Port: 30080}}); err != nil {
				t.Fatal(err)
			}
			if err := c.SetTargetHealth("web", target.ID, 30080, TargetHealthy, ""); err != nil {
				t.Fatal(err)
			}
			id := ""
			if tc.prepare != nil {
				id = tc.prepare(t, c, target)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			before := c.Snapshot()
			// A background write may still land before the disk fills up,
			// with the same state and a new SavedAt.
			onDisk := readState(t, path)
			onDisk.SavedAt = time.Time{}

			disk.SetFull(true)
			ctx := WithSyncSave(ctxAs("user"))
			_, err := tc.call(ctx, c, id)
			if !datafs.IsFull(err) {
				t.Fatalf("call on a full disk: err = %v, want a full disk's", err)
			}
			if e := (*Error)(nil); errors.As(err, &e) {
				t.Errorf("err is a cloud *Error (%s); a full disk is the lab's trouble, not the API's", e.Code)
			}
			if after := c.Snapshot(); !reflect.DeepEqual(after, before) {
				t.Errorf("state changed by a call that could not be saved:\n got %+v\nwant %+v", after, before)
			}
			if f := readState(t, path); !reflect.DeepEqual(f, onDisk) {
				f.SavedAt = time.Time{}
				if !reflect.DeepEqual(f, onDisk) {
					t.Errorf("state file changed by a refused write:\n got %+v\nwant %+v", f, onDisk)
				}
			}
			if !datafs.IsFull(c.SaveError()) {
				t.Errorf("SaveError() = %v, want a full disk's", c.SaveError())
			}
			if call := lastCall(t, c); call.Error == "" {
				t.Errorf("call log shows %s as succeeded", call.Action)
			}

			disk.SetFull(false)
			inst, err := tc.call(ctx, c, id)
			if err != nil {
				t.Fatalf("call after space was freed: %v", err)
			}
			// On disk as soon as it was answered: no Flush, no waiting.
			if got := stateOf(readState(t, path), inst.ID); got != tc.want {
				t.Errorf("state file has %s as %q, want %q", inst.ID, got, tc.want)
			}
			waitFor(t, "the save error to clear", func() bool { return c.SaveError() == nil })
		})
	}
}

// TestBackgroundSaveOnFullDisk: the controllers' calls are saved in the
// background; on a full disk SaveError says so, and once space is freed the
// writer saves by itself, with no further change to prompt it.
func TestBackgroundSaveOnFullDisk(t *testing.T) {
	disk := &datafs.Switch{}
	path := filepath.Join(t.TempDir(), "cloud.json")
	c := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path; cfg.Files = disk })
	disk.SetFull(true)
	inst, err := c.RunInstance(ctxAs("kubelet"), RunInstanceInput{})
	if err != nil {
		t.Fatalf("a background-saved call must not wait for the disk: %v", err)
	}
	waitFor(t, "the writer to meet the full disk", func() bool { return datafs.IsFull(c.SaveError()) })
	disk.SetFull(false)
	waitFor(t, "the writer to save once space is freed", func() bool { return c.SaveError() == nil })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Instances) != 1 || f.Instances[0].ID != inst.ID {
		t.Errorf("state file holds %+v, want %s", f.Instances, inst.ID)
	}
}
