package sim

import (
	"context"
	"time"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// NodesInitialized counts the running instances and the Nodes that are
// Ready and, when the Node controller is on (nodeCtrl), initialized
// (providerID set, uninitialized taint gone).
func (s *Sim) NodesInitialized(nodeCtrl bool) (done, running int) {
	for _, inst := range s.Cloud.Snapshot().Instances {
		if inst.State == cloud.InstanceRunning {
			running++
		}
	}
	for _, n := range s.Observer.Snapshot().Nodes {
		if n.Ready == "True" && (!nodeCtrl || (n.ProviderID != "" && !n.Tainted())) {
			done++
		}
	}
	return done, running
}

// WaitNodesInitialized waits until every running instance's Node is Ready
// and initialized (NodesInitialized), until timeout or ctx ends; it
// reports the last count and whether all were done. The lab is ready for
// a student only then: a Service created while its nodes still have no
// providerID can be ensured with that stale node list by k8s.io/cloud-
// provider's Service controller and keep no targets (see docs/aws.md).
func (s *Sim) WaitNodesInitialized(ctx context.Context, nodeCtrl bool, timeout time.Duration) (done, running int, ok bool) {
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, running = s.NodesInitialized(nodeCtrl)
		if done >= running {
			return done, running, true
		}
		select {
		case <-ctx.Done():
			return done, running, false
		case <-deadline:
			return done, running, false
		case <-tick.C:
		}
	}
}
