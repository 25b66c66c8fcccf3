package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDeny(t *testing.T) {
	tests := []struct {
		name    string
		action  string
		caller  string
		call    func(ctx context.Context, c *Cloud) error
		wantMsg string
	}{
		{"create LB", ActionCreateLoadBalancer, "service-controller", func(ctx context.Context, c *Cloud) error {
			_, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Port: 80, TargetPort: 30080}}})
			return err
		}, "AccessDenied: User: arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/service-controller is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"},
		{"describe instances", ActionDescribeInstances, "node-controller", func(ctx context.Context, c *Cloud) error {
			_, err := c.DescribeInstances(ctx, DescribeInstancesInput{})
			return err
		}, "AccessDenied: User: arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/node-controller is not authorized to perform: ec2:DescribeInstances"},
		{"create route", ActionCreateRoute, "route-controller", func(ctx context.Context, c *Cloud) error {
			return c.CreateRoute(ctx, "10.244.0.0/24", "i-0123456789abcdef0")
		}, "AccessDenied: User: arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/route-controller is not authorized to perform: ec2:CreateRoute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCloud(t, nil)
			if err := c.SetFaults(Faults{Deny: []string{tt.action}}); err != nil {
				t.Fatal(err)
			}
			before := c.Snapshot()
			err := tt.call(ctxAs(tt.caller), c)
			wantCode(t, err, ErrAccessDenied, tt.action)
			if err.Error() != tt.wantMsg {
				t.Errorf("message:\n got %s\nwant %s", err, tt.wantMsg)
			}
			if !reflect.DeepEqual(before, c.Snapshot()) {
				t.Error("denied call changed state")
			}
			if call := lastCall(t, c); call.ErrorCode != ErrAccessDenied || call.Action != tt.action || call.Caller != tt.caller || call.Error != tt.wantMsg {
				t.Errorf("logged call = %+v", call)
			}
			// Other actions are unaffected.
			if _, err := c.DescribeLoadBalancers(ctxAs(tt.caller)); err != nil && tt.action != ActionDescribeLoadBalancers {
				t.Errorf("undenied action failed: %v", err)
			}
		})
	}
}

func TestThrottling(t *testing.T) {
	fc := newFakeClock()
	c := newTestCloud(t, func(cfg *Config) { cfg.Clock = fc })
	ctx := ctxAs("node-controller")
	if err := c.SetFaults(Faults{QPS: 1, Burst: 2, Deny: []string{ActionRunInstances}}); err != nil {
		t.Fatal(err)
	}
	// Denied calls are rejected before the rate limit and spend no token.
	for range 3 {
		if _, err := c.RunInstance(ctx, RunInstanceInput{}); !IsCode(err, ErrAccessDenied) {
			t.Fatalf("want AccessDenied, got %v", err)
		}
	}
	describe := func() error {
		_, err := c.DescribeInstances(ctx, DescribeInstancesInput{})
		return err
	}
	steps := []struct {
		advance  time.Duration
		wantCode string // "" = allowed
	}{
		{0, ""}, {0, ""}, // the burst
		{0, ErrThrottling},
		{500 * time.Millisecond, ErrThrottling},
		{500 * time.Millisecond, ""}, // one token refilled after 1s at 1 QPS
		{0, ErrThrottling},
		{5 * time.Second, ""}, {0, ""}, {0, ErrThrottling}, // refills only up to the burst
	}
	for i, s := range steps {
		fc.Step(s.advance)
		err := describe()
		if s.wantCode == "" {
			if err != nil {
				t.Fatalf("step %d: want allowed, got %v", i, err)
			}
			continue
		}
		wantCode(t, err, s.wantCode, ActionDescribeInstances)
		if err.Error() != "Throttling: Rate exceeded" {
			t.Fatalf("message = %q", err)
		}
		if call := lastCall(t, c); call.ErrorCode != ErrThrottling {
			t.Fatalf("throttled call not logged: %+v", call)
		}
	}

	// Changing only the deny list keeps the bucket: no fresh burst.
	if err := c.SetFaults(Faults{QPS: 1, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, describe(), ErrThrottling, "")
	// Lifting the limit lets everything through.
	if err := c.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := describe(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBurstDefault(t *testing.T) {
	c := newTestCloud(t, nil)
	if err := c.SetFaults(Faults{QPS: 2.5}); err != nil {
		t.Fatal(err)
	}
	if got := c.Faults().Burst; got != 3 {
		t.Fatalf("burst = %d, want ceil(qps) = 3", got)
	}
}

func TestFailNext(t *testing.T) {
	c := newTestCloud(t, nil)
	ctx := ctxAs("user")
	if err := c.SetFaults(Faults{FailNext: map[string]int{ActionRunInstances: 2, ActionDeleteRoute: 0}}); err != nil {
		t.Fatal(err)
	}
	if got := c.Faults().FailNext; !reflect.DeepEqual(got, map[string]int{ActionRunInstances: 2}) {
		t.Fatalf("FailNext = %v (zero counts dropped)", got)
	}
	events, cancel := c.Subscribe(64)
	defer cancel()
	for i, wantLeft := range []int{1, 0} {
		_, err := c.RunInstance(ctx, RunInstanceInput{})
		wantCode(t, err, ErrInjected, ActionRunInstances)
		if got := c.Faults().FailNext[ActionRunInstances]; got != wantLeft {
			t.Fatalf("after failure %d: %d left, want %d", i, got, wantLeft)
		}
	}
	if len(c.Snapshot().Instances) != 0 {
		t.Fatal("injected failure created an instance")
	}
	// Other actions were not affected; the third launch succeeds.
	if _, err := c.DescribeInstances(ctx, DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, c, RunInstanceInput{})
	if f := c.Faults(); f.FailNext != nil {
		t.Fatalf("FailNext = %v, want empty", f.FailNext)
	}
	faultEvents := 0
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventFaults {
			faultEvents++
		}
	}
	if faultEvents != 2 {
		t.Fatalf("faults events = %d, want one per consumed failure", faultEvents)
	}
}

func TestLatency(t *testing.T) {
	fc := newFakeClock()
	c := newTestCloud(t, func(cfg *Config) { cfg.Clock = fc })
	if err := c.SetFaults(Faults{Latency: Duration{Duration: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}

	t.Run("slept on the injected clock", func(t *testing.T) {
		done := async(func() (Instance, error) { return c.RunInstance(ctxAs("user"), RunInstanceInput{}) })
		waitFor(t, "latency timer", fc.HasWaiters)
		if call := lastCall(t, c); call.State != CallRunning || call.Action != ActionRunInstances {
			t.Fatalf("in-flight call = %+v", call)
		}
		fc.Step(1999 * time.Millisecond)
		notDone(t, done, "call before its latency")
		fc.Step(time.Millisecond)
		if r := await(t, done, "call after latency"); r.err != nil {
			t.Fatal(r.err)
		}
		if call := lastCall(t, c); call.State != CallDone || call.Duration != 2*time.Second {
			t.Fatalf("finished call = %+v, want duration 2s", call)
		}
	})

	t.Run("canceled while sleeping", func(t *testing.T) {
		before := c.Snapshot()
		ctx, cancel := context.WithCancel(ctxAs("user"))
		done := async(func() (Instance, error) { return c.RunInstance(ctx, RunInstanceInput{}) })
		waitFor(t, "latency timer", fc.HasWaiters)
		cancel()
		r := await(t, done, "canceled call")
		wantCode(t, r.err, ErrCanceled, ActionRunInstances)
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("errors.Is(err, context.Canceled) = false for %v", r.err)
		}
		if !reflect.DeepEqual(before, c.Snapshot()) {
			t.Fatal("canceled call changed state")
		}
		if call := lastCall(t, c); call.ErrorCode != ErrCanceled || call.State != CallDone {
			t.Fatalf("logged call = %+v", call)
		}
	})
}

func TestStepMode(t *testing.T) {
	c := newTestCloud(t, nil)
	c.SetStepMode(true)
	if !c.StepMode() {
		t.Fatal("StepMode() = false after SetStepMode(true)")
	}
	if _, ok := c.Release(); ok {
		t.Fatal("Release with nothing held reported true")
	}

	launch := func(ctx context.Context) <-chan result[Instance] {
		n := len(c.Waiting())
		ch := async(func() (Instance, error) { return c.RunInstance(ctx, RunInstanceInput{}) })
		waitFor(t, "call to be held", func() bool { return len(c.Waiting()) == n+1 })
		return ch
	}
	first := launch(ctxAs("user"))
	ctx2, cancel2 := context.WithCancel(ctxAs("kubelet"))
	defer cancel2()
	second := launch(ctx2)
	third := launch(ctxAs("node-controller"))

	held := c.Waiting()
	if len(held) != 3 || held[0].Caller != "user" || held[1].Caller != "kubelet" || held[2].Caller != "node-controller" {
		t.Fatalf("Waiting = %+v", held)
	}
	for _, h := range held {
		if h.State != CallWaiting {
			t.Fatalf("held call state = %s", h.State)
		}
	}
	if logged := c.Calls(held[0].Seq - 1); len(logged) != 3 || logged[2].State != CallWaiting {
		t.Fatalf("held calls in the log: %+v", logged)
	}
	notDone(t, first, "held call")
	if len(c.Snapshot().Instances) != 0 {
		t.Fatal("held call executed")
	}

	rel, ok := c.Release()
	if !ok || rel.Seq != held[0].Seq {
		t.Fatalf("Release = %+v %v, want the oldest (seq %d)", rel, ok, held[0].Seq)
	}
	if r := await(t, first, "released call"); r.err != nil {
		t.Fatal(r.err)
	}
	notDone(t, second, "second held call")

	cancel2()
	r := await(t, second, "canceled held call")
	wantCode(t, r.err, ErrCanceled, ActionRunInstances)
	if w := c.Waiting(); len(w) != 1 || w[0].Seq != held[2].Seq {
		t.Fatalf("after cancel, Waiting = %+v", w)
	}

	c.SetStepMode(false)
	if r := await(t, third, "call released by turning step mode off"); r.err != nil {
		t.Fatal(r.err)
	}
	if len(c.Waiting()) != 0 || c.StepMode() {
		t.Fatal("step mode still holding")
	}
	if got := len(c.Snapshot().Instances); got != 2 {
		t.Fatalf("instances = %d, want 2 (the canceled call changed nothing)", got)
	}
	for _, call := range c.Calls(held[0].Seq - 1) {
		if call.State != CallDone {
			t.Fatalf("call left unfinished in the log: %+v", call)
		}
	}
}

func TestStepModeReleasedByClose(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetStepMode(true)
	done := async(func() ([]Route, error) { return c.DescribeRouteTable(ctxAs("route-controller")) })
	waitFor(t, "call to be held", func() bool { return len(c.Waiting()) == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r := await(t, done, "call released by Close"); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestSetFaultsValidation(t *testing.T) {
	good := Faults{Deny: []string{ActionCreateRoute}, Latency: Duration{Duration: time.Second}, QPS: 5, Burst: 10}
	tests := []struct {
		name    string
		f       Faults
		wantErr []string
	}{
		{"unknown deny", Faults{Deny: []string{"CreateLoadBalancers", "RunInstances"}},
			[]string{"unknown action(s) CreateLoadBalancers", "valid actions: " + strings.Join(Actions(), ", ")}},
		{"unknown failNext", Faults{FailNext: map[string]int{"Reboot": 1}}, []string{"unknown action(s) Reboot"}},
		{"negative failNext", Faults{FailNext: map[string]int{ActionCreateRoute: -1}}, []string{"failNext[CreateRoute] = -1"}},
		{"negative latency", Faults{Latency: Duration{Duration: -time.Second}}, []string{"latency -1s: must not be negative"}},
		{"negative qps", Faults{QPS: -1}, []string{"qps -1"}},
		{"NaN qps", Faults{QPS: math.NaN()}, []string{"qps NaN"}},
		{"negative burst", Faults{QPS: 1, Burst: -3}, []string{"burst -3"}},
		{"several problems at once", Faults{QPS: -1, Burst: -1}, []string{"qps -1", "burst -1"}},
		{"latency of hours", Faults{Latency: Duration{Duration: 9999 * time.Hour}}, []string{"latency 9999h0m0s: must be at most 1m0s"}},
		{"latency just over a minute", Faults{Latency: Duration{Duration: MaxLatency + time.Millisecond}}, []string{"must be at most 1m0s"}},
		{"infinite qps", Faults{QPS: math.Inf(1)}, []string{"qps +Inf: must be a finite number"}},
		{"qps too high", Faults{QPS: MaxQPS + 0.5}, []string{"qps 1000.5: must be at most 1000"}},
		{"burst too high", Faults{QPS: 5, Burst: MaxBurst + 1}, []string{"burst 1001: must be at most 1000"}},
		{"burst too high without qps", Faults{Burst: 1 << 40}, []string{"must be at most 1000"}},
		{"bounds and an unknown action", Faults{Deny: []string{"Nope"}, Latency: Duration{Duration: time.Hour}, QPS: 1e9},
			[]string{"unknown action(s) Nope", "latency 1h0m0s", "qps 1e+09"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCloud(t, nil)
			if err := c.SetFaults(good); err != nil {
				t.Fatal(err)
			}
			before := c.Faults()
			err := c.SetFaults(tt.f)
			if err == nil {
				t.Fatal("SetFaults accepted invalid faults")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if after := c.Faults(); !reflect.DeepEqual(before, after) {
				t.Errorf("faults changed on error: %+v -> %+v", before, after)
			}
		})
	}
}

// The bounds themselves are accepted, and so is a tiny QPS (a throttled
// call fails at once, it never waits for a token).
func TestSetFaultsBounds(t *testing.T) {
	for _, f := range []Faults{
		{Latency: Duration{Duration: MaxLatency}},
		{QPS: MaxQPS, Burst: MaxBurst},
		{QPS: MaxQPS - 0.5},
		{QPS: 0.001, Burst: 1},
	} {
		c := newTestCloud(t, nil)
		if err := c.SetFaults(f); err != nil {
			t.Errorf("SetFaults(%+v) = %v", f, err)
		}
	}
}

func TestFaultsJSON(t *testing.T) {
	in := `{"deny":["CreateLoadBalancer","CreateLoadBalancer"],"latency":"45s","qps":5,"burst":10,"failNext":{"CreateRoute":2}}`
	var f Faults
	if err := json.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	if f.Latency.Duration != 45*time.Second || f.QPS != 5 || f.Burst != 10 || f.FailNext[ActionCreateRoute] != 2 {
		t.Fatalf("decoded %+v", f)
	}
	c := newTestCloud(t, nil)
	if err := c.SetFaults(f); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c.Faults())
	if want := `{"deny":["CreateLoadBalancer"],"latency":"45s","qps":5,"burst":10,"failNext":{"CreateRoute":2}}`; string(out) != want {
		t.Fatalf("encoded\n %s\nwant\n %s", out, want)
	}
	out, _ = json.Marshal(cloneFaults(Faults{}))
	if want := `{"deny":[],"latency":"0s","qps":0,"burst":0}`; string(out) != want {
		t.Fatalf("zero faults encoded as %s, want %s", out, want)
	}

	for _, bad := range []string{`{"latency":"soon"}`, `{"latency":5}`, `{"latency":true}`} {
		if err := json.Unmarshal([]byte(bad), &f); err == nil || !strings.Contains(err.Error(), `like "2s"`) {
			t.Errorf("Unmarshal(%s) = %v, want a clear duration error", bad, err)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.Duration != 0 {
		t.Errorf("null = %v, %v", d, err)
	}
}

func TestActions(t *testing.T) {
	a := Actions()
	if len(a) != 15 || !slices.IsSorted(a) {
		t.Fatalf("Actions() = %v", a)
	}
	a[0] = "mutated"
	if Actions()[0] == "mutated" {
		t.Fatal("Actions shares its slice")
	}
}
