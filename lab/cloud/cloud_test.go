package cloud

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestCallLogRing(t *testing.T) {
	c := newTestCloud(t, func(cfg *Config) { cfg.CallLogSize = 10 })
	for range 25 {
		if _, err := c.DescribeInstances(ctxAs("user"), DescribeInstancesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		since          uint64
		wantN          int
		wantFirst      uint64
		wantLastResult string
	}{
		{0, 10, 16, "0 instances"},
		{20, 5, 21, "0 instances"},
		{25, 0, 0, ""},
		{99, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("since ", tt.since), func(t *testing.T) {
			calls := c.Calls(tt.since)
			if len(calls) != tt.wantN {
				t.Fatalf("got %d calls, want %d", len(calls), tt.wantN)
			}
			for i, call := range calls {
				if call.Seq != tt.wantFirst+uint64(i) || call.State != CallDone || call.Result != tt.wantLastResult {
					t.Fatalf("call %d = %+v", i, call)
				}
			}
		})
	}
}

func TestSubscribeSlowSubscriberDoesNotBlock(t *testing.T) {
	// 300 load balancers: past the default quotas, which are not this test's.
	c := newTestCloud(t, func(cfg *Config) { cfg.Quotas = ScaleQuotas(300) })
	slow, cancelSlow := c.Subscribe(1) // never read
	fast, cancelFast := c.Subscribe(10000)

	var got []Event
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range fast {
			got = append(got, ev)
		}
	}()

	start := time.Now()
	const n = 300
	for i := range n {
		mustCreateLB(t, c, CreateLoadBalancerInput{Name: fmt.Sprintf("lb-%d", i)})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%d calls took %v with a stuck subscriber", n, d)
	}
	cancelFast()
	cancelFast() // idempotent
	wg.Wait()

	// Per call: a "call" event when it starts, a "loadbalancer" event, a
	// "call" event when it finishes.
	if len(got) != 3*n {
		t.Fatalf("fast subscriber got %d events, want %d", len(got), 3*n)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("gap or reorder at %d: %d after %d", i, got[i].Seq, got[i-1].Seq)
		}
	}
	first, last := got[0], got[2]
	if first.Kind != EventCall || first.Call.State != CallRunning || got[1].Kind != EventLoadBalancer || got[1].ID != "lb-0" ||
		last.Kind != EventCall || last.Call.State != CallDone || last.Call.Seq != first.Call.Seq {
		t.Fatalf("first call's events: %+v %+v %+v", first, got[1], last)
	}

	// The slow one kept only what fit; its next Seq reveals the gap.
	ev := <-slow
	if ev.Seq != got[0].Seq {
		t.Fatalf("slow subscriber's buffered event seq %d, want %d", ev.Seq, got[0].Seq)
	}
	cancelSlow()
	if _, open := <-slow; open {
		t.Fatal("channel still open after cancel")
	}
}

func TestSnapshotIsDeepCopy(t *testing.T) {
	c := newTestCloud(t, nil)
	inst := mustRun(t, c, RunInstanceInput{Tags: map[string]string{"a": "b"}})
	mustCreateLB(t, c, CreateLoadBalancerInput{Name: "web"})
	if err := c.RegisterTargets(ctxAs("x"), "web", []Target{{ID: inst.ID, Port: 30080}}); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigureHealthCheck(ctxAs("x"), "web", HealthCheck{Port: 10256}); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	s.Instances[0].Tags["a"] = "changed"
	s.LoadBalancers[0].Targets[0].Health = TargetHealthy
	s.LoadBalancers[0].Listeners[0].Port = 1
	s.LoadBalancers[0].HealthCheck.Port = 1
	again := c.Snapshot()
	if again.Instances[0].Tags["a"] != "b" || again.LoadBalancers[0].Targets[0].Health != TargetInitial ||
		again.LoadBalancers[0].Listeners[0].Port != 80 || again.LoadBalancers[0].HealthCheck.Port != 10256 {
		t.Fatalf("snapshot shares memory with the cloud: %+v", again)
	}
}

// TestConcurrentCalls is mostly for -race: every entry point at once,
// including step mode being toggled and faults being swapped under load.
func TestConcurrentCalls(t *testing.T) {
	c := newTestCloud(t, func(cfg *Config) {
		cfg.StatePath = t.TempDir() + "/state.json"
		cfg.CallLogSize = 100000
		cfg.Quotas = ScaleQuotas(16 * 40) // every worker's load balancers may stay
	})
	events, cancel := c.Subscribe(64)
	defer cancel()
	go func() {
		for range events { // a reader that falls behind now and then
		}
	}()

	const workers, iters = 16, 40
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // an instructor poking at the controls
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.SetStepMode(i%4 == 0)
			c.Release()
			_ = c.SetFaults(Faults{Deny: []string{ActionDescribeRouteTables}})
			_ = c.Snapshot()
			_ = c.Calls(uint64(i))
			_ = c.Waiting()
			time.Sleep(100 * time.Microsecond)
		}
	}()

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := ctxAs(fmt.Sprintf("worker-%d", w))
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range iters {
				inst, err := c.RunInstance(ctx, RunInstanceInput{})
				if err != nil {
					t.Error(err)
					return
				}
				name := fmt.Sprintf("lb-%d-%d", w, i)
				if _, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: name, Listeners: []Listener{{Port: 80, TargetPort: 30080}}}); err != nil {
					t.Error(err)
					return
				}
				_ = c.RegisterTargets(ctx, name, []Target{{ID: inst.ID, Port: 30080}})
				_ = c.SetTargetHealth(name, inst.ID, 30080, TargetHealthy, "")
				_, _ = c.DescribeLoadBalancers(ctx, name)
				_, _ = c.DescribeInstances(ctx, DescribeInstancesInput{PrivateDNSNames: []string{inst.PrivateDNSName}})
				cidr := fmt.Sprintf("10.%d.%d.0/24", 100+w, i)
				_ = c.CreateRoute(ctx, cidr, inst.ID)
				_, _ = c.DescribeRouteTable(ctx)
				if r.IntN(2) == 0 {
					_ = c.DeleteRoute(ctx, cidr)
					_ = c.DeleteLoadBalancer(ctx, name)
					_, _ = c.TerminateInstance(ctx, inst.ID)
				} else {
					_, _ = c.StopInstance(ctx, inst.ID)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	c.SetStepMode(false)

	calls := c.Calls(0)
	for i, call := range calls {
		if call.Seq != uint64(i+1) || call.State != CallDone {
			t.Fatalf("call %d: %+v", i, call)
		}
	}
	if got := len(c.Snapshot().Instances); got != workers*iters {
		t.Fatalf("instances = %d, want %d", got, workers*iters)
	}
}

func TestConsoleLookupsAreNotAPICalls(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithCaller(context.Background(), "user")
	inst, err := c.RunInstance(ctx, RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: "web", Listeners: []Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}); err != nil {
		t.Fatal(err)
	}
	before := len(c.Calls(0))
	for _, key := range []string{inst.ID, inst.PrivateDNSName} {
		if got, ok := c.LookupInstance(key); !ok || got.ID != inst.ID {
			t.Errorf("LookupInstance(%q) = %v, %v", key, got.ID, ok)
		}
	}
	if _, ok := c.LookupInstance("i-0000"); ok {
		t.Error("unknown instance found")
	}
	if lb, ok := c.LookupLoadBalancer("web"); !ok || lb.Name != "web" {
		t.Errorf("LookupLoadBalancer = %v, %v", lb.Name, ok)
	}
	if after := len(c.Calls(0)); after != before {
		t.Errorf("console lookups added %d calls to the log", after-before)
	}
}
