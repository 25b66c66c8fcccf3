package dataplane

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// syncBuffer is a log the test reads while the data plane writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// The cap holds even when the cloud holds more listeners than its quota
// lets anyone create: a state file saved under a larger quota, restored
// under the default one. The oldest load balancers keep their ports.
func TestListenerCap(t *testing.T) {
	state := filepath.Join(t.TempDir(), "cloud.json")
	clk := testingclock.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	roomy, err := cloud.New(cloud.Config{StatePath: state, Clock: clk, Quotas: cloud.ScaleQuotas(10)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := cloud.WithCaller(t.Context(), "test")
	for i := range 5 {
		clk.Step(time.Second) // lb-0 is the oldest
		if _, err := roomy.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{Name: fmt.Sprintf("lb-%d", i),
			Listeners: []cloud.Listener{{Port: 80, TargetPort: 30080}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := roomy.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{Name: "dns",
		Listeners: []cloud.Listener{{Protocol: "UDP", Port: 53, TargetPort: 30053}}}); err != nil {
		t.Fatal(err)
	}
	if err := roomy.Close(); err != nil {
		t.Fatal(err)
	}

	c, err := cloud.New(cloud.Config{StatePath: state, Quotas: cloud.Quotas{ListenerSockets: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var log syncBuffer
	d, err := New(Config{Client: fake.NewClientset(), Cloud: c, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.closeListeners)
	if got := d.ListenerCap(); got != 3 {
		t.Fatalf("cap %d, want the cloud's quota 3", got)
	}

	lbsOf := func(ls []ListenerInfo) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.LB)
		}
		return out
	}
	for _, step := range []struct {
		name          string
		do            func() error
		open, refused []string
		logged        int // "listener refused" lines so far
	}{
		{"past the cap the newest are refused", nil, []string{"lb-0", "lb-1", "lb-2"}, []string{"lb-3", "lb-4"}, 2},
		{"a refusal is logged once", nil, []string{"lb-0", "lb-1", "lb-2"}, []string{"lb-3", "lb-4"}, 2},
		{"a freed port goes to the next oldest", func() error { return c.DeleteLoadBalancer(ctx, "lb-1") },
			[]string{"lb-0", "lb-2", "lb-3"}, []string{"lb-4"}, 2},
		{"under the cap nothing is refused", func() error { return c.DeleteLoadBalancer(ctx, "lb-0") },
			[]string{"lb-2", "lb-3", "lb-4"}, nil, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.do != nil {
				if err := step.do(); err != nil {
					t.Fatal(err)
				}
			}
			d.syncCloud()
			open := d.Listeners()
			if got := lbsOf(open); !slices.Equal(got, step.open) {
				t.Errorf("open %v, want %v", got, step.open)
			}
			if got := lbsOf(d.RefusedListeners()); !slices.Equal(got, step.refused) {
				t.Errorf("refused %v, want %v", got, step.refused)
			}
			if n := log.count("load balancer listener refused"); n != step.logged {
				t.Errorf("%d refusals logged, want %d", n, step.logged)
			}
			// Each open listener is a real socket.
			for _, l := range open {
				conn, err := net.Dial("tcp", l.Address)
				if err != nil {
					t.Errorf("%s:%d at %s: %v", l.LB, l.Port, l.Address, err)
					continue
				}
				_ = conn.Close()
			}
		})
	}
}
