package flow

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

func newTestObserver(t *testing.T) *Observer {
	t.Helper()
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Client: fake.NewClientset(), Cloud: c})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// stepsDone is a six-step strip whose first n steps are done at the given
// times (the evidence's).
func stepsDone(at ...time.Time) []Step {
	steps := make([]Step, 6)
	for i := range steps {
		steps[i] = Step{N: i + 1, Status: StepPending}
		if i < len(at) {
			steps[i].Status, steps[i].At = StepDone, at[i]
		}
	}
	return steps
}

// A step keeps the time of the evidence that completed it: a later sync's
// call does not move it, a step whose evidence has whole seconds (an
// event) never shows a time before the step it follows, and a step that
// is undone and done again gets its new time.
func TestStepTimesKeepTheirEvidence(t *testing.T) {
	o := newTestObserver(t)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	at := func(steps []Step) []time.Duration {
		var out []time.Duration
		for _, s := range steps {
			if s.Status == StepDone {
				out = append(out, s.At.Sub(t0))
			}
		}
		return out
	}
	same := func(got []time.Duration, want ...time.Duration) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()

	s := stepsDone(ms(0), ms(1200), ms(1500), ms(2100))
	o.stampLocked("svc/default/web", s)
	if got := at(s); !same(got, 0, 1200*time.Millisecond, 1500*time.Millisecond, 2100*time.Millisecond) {
		t.Fatalf("first stamps %v", got)
	}
	// A node joined: step 4's latest call is 100 s later; step 5's event
	// has whole seconds (2.000 s, before step 4's 2.1 s).
	s = stepsDone(ms(0), ms(1200), ms(1500), ms(106600), ms(2000))
	o.stampLocked("svc/default/web", s)
	if got := at(s); !same(got, 0, 1200*time.Millisecond, 1500*time.Millisecond, 2100*time.Millisecond, 2100*time.Millisecond) {
		t.Errorf("after a later sync: %v, want step 4 kept at 2.1 s and step 5 not before it", got)
	}
	for i := 1; i < len(s); i++ {
		if s[i].Status == StepDone && s[i].At.Before(s[i-1].At) {
			t.Errorf("step %d at %v before step %d at %v", i+1, s[i].At.Sub(t0), i, s[i-1].At.Sub(t0))
		}
	}
	// The load balancer was deleted: steps 3 on are undone, then made again.
	o.stampLocked("svc/default/web", stepsDone(ms(0), ms(1200)))
	s = stepsDone(ms(0), ms(1200), ms(300000))
	o.stampLocked("svc/default/web", s)
	if got := at(s); !same(got, 0, 1200*time.Millisecond, 300*time.Second) {
		t.Errorf("made again: %v, want step 3 at its new time", got)
	}
}

// Evidence belongs to a Service by UID, not by name: the events and the
// last request of an earlier Service of the same name do not count, and
// the earlier one's load balancer (the CCM names it after the UID) is not
// the new one's.
func TestEvidenceMatchedByUID(t *testing.T) {
	on := map[string]bool{"service": true, "node": true}
	const uid, oldUID = "3f0c9a52-1111-4c3e-9a7d-0123456789ab", "77777777-2222-4c3e-9a7d-0123456789ab"
	svc := svcView(func(v *ServiceView) { v.UID = uid })
	ensuring := EventView{Kind: "Service", Object: "web", Reason: "EnsuringLoadBalancer", Source: "service-controller", Time: t0}
	old, own := ensuring, ensuring
	old.UID, own.UID = oldUID, uid
	for _, tc := range []struct {
		name string
		in   serviceInput
		want int
	}{
		{"the earlier Service's event", serviceInput{svc: svc, controllers: on, eligibleNodes: 3, events: []EventView{old}}, 1},
		{"its own event", serviceInput{svc: svc, controllers: on, eligibleNodes: 3, events: []EventView{own}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f := deriveService(tc.in, nil); f.Step != tc.want {
				t.Errorf("step %d, want %d (%+v)", f.Step, tc.want, f.Steps)
			}
		})
	}

	done := svcView(func(v *ServiceView) {
		v.UID, v.Finalizers, v.Ingress = uid, []string{FinalizerLBCleanup}, []string{"lb.example"}
	})
	lb := &cloud.LoadBalancer{Name: "lb", TargetType: "instance", Targets: []cloud.Target{{ID: "i-1", Port: 31234}}, HealthCheck: &cloud.HealthCheck{Protocol: "TCP", Port: 31234}}
	in := serviceInput{svc: done, controllers: on, eligibleNodes: 3, endpoints: 1, lb: lb, lbName: "lb",
		calls: []cloud.Call{call(1, "CreateLoadBalancer", ""), call(2, "RegisterTargets", ""), call(3, "ConfigureHealthCheck", "")}}
	for _, tc := range []struct {
		name     string
		traceUID string
		want     int
	}{
		{"a request to the earlier Service", oldUID, 5},
		{"a request to this one", uid, 6},
		{"a request whose Service the data plane did not know", "", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.lastTrace = &TraceInfo{ID: "t-1", Service: "default/web", ServiceUID: tc.traceUID, Status: 200, Time: t0.Add(time.Minute)}
			f := deriveService(in, nil)
			if f.Step != tc.want {
				t.Errorf("step %d, want %d", f.Step, tc.want)
			}
			if tc.want == 6 && f.Steps[5].EvidenceKey != flowtext.Answered {
				t.Errorf("step 6's evidence %q", f.Steps[5].EvidenceKey)
			}
		})
	}

	o := newTestObserver(t)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.services["default/web"] = done
	for name, stale := range map[string]bool{
		"a3f0c9a5211114c3e9a7d0123456789a": false, // its own
		"a7777777722224c3e9a7d0123456789a": true,  // the earlier Service's
		"k8s-default-web-0123456789":       false, // the load balancer controller's: not the CCM's naming
	} {
		if got := o.staleLBLocked(name, "default/web"); got != stale {
			t.Errorf("staleLB(%s) = %v, want %v", name, got, stale)
		}
	}
}
