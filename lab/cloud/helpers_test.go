package cloud

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

func newTestCloud(t testing.TB, mod func(*Config)) *Cloud {
	t.Helper()
	var cfg Config
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
}

func ctxAs(caller string) context.Context {
	return WithCaller(context.Background(), caller)
}

func mustRun(t testing.TB, c *Cloud, in RunInstanceInput) Instance {
	t.Helper()
	inst, err := c.RunInstance(ctxAs("user"), in)
	if err != nil {
		t.Fatalf("RunInstance: %v", err)
	}
	return inst
}

func mustCreateLB(t testing.TB, c *Cloud, in CreateLoadBalancerInput) LoadBalancer {
	t.Helper()
	if in.Listeners == nil {
		in.Listeners = []Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}
	}
	lb, err := c.CreateLoadBalancer(ctxAs("service-controller"), in)
	if err != nil {
		t.Fatalf("CreateLoadBalancer: %v", err)
	}
	return lb
}

func lastCall(t testing.TB, c *Cloud) Call {
	t.Helper()
	calls := c.Calls(0)
	if len(calls) == 0 {
		t.Fatal("call log is empty")
	}
	return calls[len(calls)-1]
}

// waitFor is testutil.EventuallyTrue: the cloud's background work (held
// calls, latency timers) has no other hook to wait on from outside.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyTrue(t, 5*time.Second, what, cond)
}

func wantCode(t testing.TB, err error, code, action string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%v), want %s", e.Code, err, code)
	}
	if action != "" && e.Action != action {
		t.Fatalf("action = %q, want %q", e.Action, action)
	}
}

type result[T any] struct {
	v   T
	err error
}

// async runs f in a goroutine and returns a channel with its outcome.
func async[T any](f func() (T, error)) <-chan result[T] {
	ch := make(chan result[T], 1)
	go func() {
		v, err := f()
		ch <- result[T]{v, err}
	}()
	return ch
}

func notDone[T any](t testing.TB, ch <-chan result[T], what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s finished early: %+v", what, r)
	case <-time.After(20 * time.Millisecond):
	}
}

func await[T any](t testing.TB, ch <-chan result[T], what string) result[T] {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
