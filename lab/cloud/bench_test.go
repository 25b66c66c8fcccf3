package cloud

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// BenchmarkAPICalls measures the call pipeline (log, events, checks) plus a
// cheap operation. It reports calls/sec because that is what the lab's
// budget ("1,000 nodes and 1,000 LoadBalancer Services converge") is made of.
func BenchmarkAPICalls(b *testing.B) {
	setup := func(b *testing.B, statePath string) *Cloud {
		c := newTestCloud(b, func(cfg *Config) { cfg.StatePath = statePath })
		for range 10 {
			mustRun(b, c, RunInstanceInput{})
		}
		// A subscriber, as the web hub will be, so fan-out is measured too.
		events, cancel := c.Subscribe(1024)
		b.Cleanup(cancel)
		go func() {
			for range events {
			}
		}()
		return c
	}
	report := func(b *testing.B, calls int) {
		b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/sec")
	}
	ctx := ctxAs("bench")

	b.Run("DescribeInstances", func(b *testing.B) {
		c := setup(b, "")
		for b.Loop() {
			if _, err := c.DescribeInstances(ctx, DescribeInstancesInput{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N)
	})

	createDelete := func(c *Cloud, name string) error {
		if _, err := c.CreateLoadBalancer(ctx, CreateLoadBalancerInput{Name: name, Listeners: []Listener{{Port: 80, TargetPort: 30080}}}); err != nil {
			return err
		}
		return c.DeleteLoadBalancer(ctx, name)
	}
	b.Run("CreateDeleteLB", func(b *testing.B) {
		c := setup(b, "")
		for b.Loop() {
			if err := createDelete(c, "lb"); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 2*b.N)
	})
	b.Run("CreateDeleteLB-persisted", func(b *testing.B) {
		c := setup(b, filepath.Join(b.TempDir(), "state.json"))
		for b.Loop() {
			if err := createDelete(c, "lb"); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 2*b.N)
	})

	b.Run("DescribeInstances-parallel", func(b *testing.B) {
		c := setup(b, "")
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.DescribeInstances(ctx, DescribeInstancesInput{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, b.N)
	})
	b.Run("CreateDeleteLB-parallel", func(b *testing.B) {
		c := setup(b, "")
		var worker atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			name := fmt.Sprintf("lb-%d", worker.Add(1))
			for pb.Next() {
				if err := createDelete(c, name); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, 2*b.N)
	})
}
