package cloud

import (
	"context"
	"reflect"
	"strings"
	"testing"
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
