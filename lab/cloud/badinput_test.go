package cloud

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixture is a small world every bad-input case runs against, so that "no
// state change" is checked against something non-empty.
type fixture struct {
	running, terminated Instance
}

func newFixture(t *testing.T) (*Cloud, fixture) {
	t.Helper()
	c := newTestCloud(t, nil)
	var f fixture
	f.running = mustRun(t, c, RunInstanceInput{})
	f.terminated = mustRun(t, c, RunInstanceInput{})
	ctx := ctxAs("user")
	if _, err := c.TerminateInstance(ctx, f.terminated.ID); err != nil {
		t.Fatal(err)
	}
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "web"})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "pods", TargetType: TargetTypeIP})
	if err := c.RegisterTargets(ctx, "web", []Target{{ID: f.running.ID, Port: 30080}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateRoute(ctx, "10.244.0.0/24", f.running.ID); err != nil {
		t.Fatal(err)
	}
	return c, f
}

func TestBadInputChangesNothing(t *testing.T) {
	const unknownID = "i-0123456789abcdef0"
	tests := []struct {
		name   string
		action string
		code   string
		do     func(ctx context.Context, c *Cloud, f fixture) error
	}{
		{"stop unknown instance", ActionStopInstances, ErrInstanceNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.StopInstance(ctx, unknownID)
			return err
		}},
		{"terminate unknown instance", ActionTerminateInstances, ErrInstanceNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.TerminateInstance(ctx, unknownID)
			return err
		}},
		{"describe unknown instance", ActionDescribeInstances, ErrInstanceNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.DescribeInstances(ctx, DescribeInstancesInput{IDs: []string{f.running.ID, unknownID}})
			return err
		}},
		{"start terminated instance", ActionStartInstances, ErrIncorrectState, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.StartInstance(ctx, f.terminated.ID)
			return err
		}},
		{"run in unknown zone", ActionRunInstances, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.RunInstance(ctx, RunInstanceInput{Zone: "us-east-1a"})
			return err
		}},
		{"run bad instance type", ActionRunInstances, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.RunInstance(ctx, RunInstanceInput{InstanceType: "huge"})
			return err
		}},
		{"run reserved tag", ActionRunInstances, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.RunInstance(ctx, RunInstanceInput{Tags: map[string]string{"aws:owner": "x"}})
			return err
		}},
		{"route malformed CIDR", ActionCreateRoute, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.CreateRoute(ctx, "10.244.1.0/33", f.running.ID)
		}},
		{"route host bits set", ActionCreateRoute, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.CreateRoute(ctx, "10.244.1.7/24", f.running.ID)
		}},
		{"route unknown instance", ActionCreateRoute, ErrInstanceNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.CreateRoute(ctx, "10.244.1.0/24", unknownID)
		}},
		{"route to terminated instance", ActionCreateRoute, ErrIncorrectState, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.CreateRoute(ctx, "10.244.1.0/24", f.terminated.ID)
		}},
		{"duplicate route", ActionCreateRoute, ErrRouteExists, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.CreateRoute(ctx, "10.244.0.0/24", f.running.ID)
		}},
		{"delete unknown route", ActionDeleteRoute, ErrRouteNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.DeleteRoute(ctx, "10.244.9.0/24")
		}},
		{"delete malformed route", ActionDeleteRoute, ErrInvalidParameter, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.DeleteRoute(ctx, "banana")
		}},
		{"duplicate LB name", ActionCreateLoadBalancer, ErrDuplicateLB, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Port: 80, TargetPort: 30081}}})
			return err
		}},
		{"empty LB name", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Listeners: []Listener{{Port: 80, TargetPort: 30081}}})
			return err
		}},
		{"LB name too long", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: strings.Repeat("a", 33), Listeners: []Listener{{Port: 80, TargetPort: 30081}}})
			return err
		}},
		{"LB name bad char", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "my_lb", Listeners: []Listener{{Port: 80, TargetPort: 30081}}})
			return err
		}},
		{"LB name leading hyphen", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "-lb", Listeners: []Listener{{Port: 80, TargetPort: 30081}}})
			return err
		}},
		{"LB without listeners", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "new"})
			return err
		}},
		{"LB duplicate listener", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "new", Listeners: []Listener{{Port: 80, TargetPort: 1}, {Port: 80, TargetPort: 2}}})
			return err
		}},
		{"LB bad target type", ActionCreateLoadBalancer, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "new", TargetType: "lambda", Listeners: []Listener{{Port: 80, TargetPort: 1}}})
			return err
		}},
		{"modify listeners bad port", ActionModifyListeners, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.SetListeners(ctx, "web", []Listener{{Port: 70000, TargetPort: 30080}})
			return err
		}},
		{"register unknown instance among valid ones", ActionRegisterTargets, ErrInvalidTarget, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.RegisterTargets(ctx, "web", []Target{{ID: f.running.ID, Port: 30099}, {ID: unknownID, Port: 30080}})
		}},
		{"register terminated instance", ActionRegisterTargets, ErrInvalidTarget, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.RegisterTargets(ctx, "web", []Target{{ID: f.terminated.ID, Port: 30080}})
		}},
		{"register bad IP", ActionRegisterTargets, ErrInvalidTarget, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.RegisterTargets(ctx, "pods", []Target{{ID: "10.1.2.3", Port: 8080}, {ID: "10.1.2.999", Port: 8080}})
		}},
		{"register bad port", ActionRegisterTargets, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.RegisterTargets(ctx, "web", []Target{{ID: f.running.ID, Port: 0}})
		}},
		{"register to unknown LB", ActionRegisterTargets, ErrLBNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.RegisterTargets(ctx, "nope", []Target{{ID: f.running.ID, Port: 30080}})
		}},
		{"describe unknown LB", ActionDescribeLoadBalancers, ErrLBNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			_, err := c.DescribeLoadBalancers(ctx, "web", "nope")
			return err
		}},
		{"delete unknown LB", ActionDeleteLoadBalancer, ErrLBNotFound, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.DeleteLoadBalancer(ctx, "nope")
		}},
		{"health check bad protocol", ActionConfigureHealthCheck, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.ConfigureHealthCheck(ctx, "web", HealthCheck{Protocol: "ICMP", Port: 10256})
		}},
		{"health check path on TCP", ActionConfigureHealthCheck, ErrValidation, func(ctx context.Context, c *Cloud, f fixture) error {
			return c.ConfigureHealthCheck(ctx, "web", HealthCheck{Protocol: "TCP", Port: 10256, Path: "/healthz"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newFixture(t)
			before := c.Snapshot()
			seq := lastCall(t, c).Seq

			err := tt.do(ctxAs("service-controller"), c, f)

			wantCode(t, err, tt.code, tt.action)
			if after := c.Snapshot(); !reflect.DeepEqual(before, after) {
				t.Errorf("state changed:\nbefore %+v\nafter  %+v", before, after)
			}
			calls := c.Calls(seq)
			if len(calls) != 1 {
				t.Fatalf("want exactly 1 new call in the log, got %+v", calls)
			}
			got := calls[0]
			if got.Action != tt.action || got.ErrorCode != tt.code || got.Error != err.Error() ||
				got.State != CallDone || got.Caller != "service-controller" || got.Result != "" {
				t.Errorf("logged call = %+v", got)
			}
		})
	}
}

// Faults are saved with the cloud's state, so a restart keeps them; a
// refused SetFaults changes neither the faults in force nor the file, and
// a state file whose faults are out of bounds (a hand edit) is refused by
// name, as SetFaults would refuse them.
func TestFaultsBadInputAndRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	c, err := New(Config{StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{Deny: []string{ActionCreateLoadBalancer}, Latency: Duration{Duration: 250 * time.Millisecond}, QPS: 2, Burst: 3,
		FailNext: map[string]int{ActionRegisterTargets: 2}}
	if err := c.SetFaults(want); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		f    Faults
		msg  string
	}{
		{"latency hours", Faults{Latency: Duration{Duration: 9999 * time.Hour}}, "must be at most"},
		{"unknown action", Faults{Deny: []string{"LaunchRockets"}}, "LaunchRockets"},
		{"qps negative", Faults{QPS: -1}, "qps"},
		{"burst huge", Faults{QPS: 1, Burst: 1 << 20}, "burst"},
		{"failNext negative", Faults{FailNext: map[string]int{ActionRunInstances: -1}}, "must not be negative"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if err := c.SetFaults(bad.f); err == nil || !strings.Contains(err.Error(), bad.msg) {
				t.Fatalf("SetFaults(%+v) = %v, want an error saying %q", bad.f, err, bad.msg)
			}
			if got := c.Faults(); !reflect.DeepEqual(got, want) {
				t.Fatalf("faults changed: %+v", got)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			now, _ := os.ReadFile(path)
			var a, b stateFile
			_ = json.Unmarshal(saved, &a)
			_ = json.Unmarshal(now, &b)
			if !reflect.DeepEqual(a.Faults, b.Faults) {
				t.Fatalf("saved faults changed: %+v", b.Faults)
			}
		})
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := New(Config{StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Faults(); !reflect.DeepEqual(got, want) {
		t.Fatalf("faults after a restart\n got %+v\nwant %+v", got, want)
	}
	// In force, not only shown: the deny answers AccessDenied.
	_, err = c2.CreateLoadBalancer(ctxAs("service-controller"), CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Port: 80, TargetPort: 30080}}})
	wantCode(t, err, ErrAccessDenied, ActionCreateLoadBalancer)
	// A FailNext consumed is saved too.
	if err := c2.SetFaults(Faults{FailNext: map[string]int{ActionDescribeInstances: 2}}); err != nil {
		t.Fatal(err)
	}
	_, err = c2.DescribeInstances(ctxAs("user"), DescribeInstancesInput{})
	wantCode(t, err, ErrInjected, ActionDescribeInstances)
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c3, err := New(Config{StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := c3.Faults(); got.FailNext[ActionDescribeInstances] != 1 || got.Latency.Duration != 0 {
		t.Fatalf("faults after a second restart: %+v", got)
	}
	if err := c3.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := c3.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), `"faults"`) {
		t.Fatalf("no fault in force, yet the file has some: %s", b)
	}

	for _, bad := range []struct{ name, faults, msg string }{
		{"latency hours", `{"latency":"9999h"}`, "must be at most"},
		{"unknown action", `{"deny":["LaunchRockets"]}`, "LaunchRockets"},
		{"qps huge", `{"qps":5000}`, "at most 1000"},
		{"latency word", `{"latency":"soon"}`, `duration "soon"`},
	} {
		t.Run("state file "+bad.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(p, []byte(`{"version":1,"faults":`+bad.faults+`}`), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := New(Config{StatePath: p})
			if err == nil {
				c.Close()
				t.Fatal("New accepted faults out of bounds")
			}
			if !strings.Contains(err.Error(), bad.msg) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q should name the file and say %q", err, bad.msg)
			}
		})
	}
}
