package flow

import (
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

var nodeStepKeys = []string{"launched", "registered", "queried", "written", "untainted", "scheduled"}

// NodeStepKeys returns the node-initialization step keys in order.
func NodeStepKeys() []string { return append([]string(nil), nodeStepKeys...) }

// NodeFlow is one node's initialization as a strip of steps (labapi).
type NodeFlow = labapi.NodeFlow

// nodeControllerCaller is how the cloud's call log names the CCM's Node
// controller.
const nodeControllerCaller = "node-controller"

type nodeInput struct {
	node        *NodeView // nil before the kubelet registered it
	name        string
	instance    *cloud.Instance
	queries     []cloud.Call // DescribeInstances calls about this node
	firstPod    *PodView
	controllers map[string]bool
}

func deriveNode(in nodeInput, firstSeen map[int]time.Time) NodeFlow {
	f := NodeFlow{Node: in.name}
	ev := make([]evidence, 6)
	if in.instance != nil {
		f.InstanceID = in.instance.ID
		ev[0] = proof(in.instance.LaunchTime, flowtext.InstanceLaunched, "id", in.instance.ID, "type", in.instance.InstanceType, "zone", in.instance.Zone)
	}
	if n := in.node; n != nil {
		ev[1] = proof(n.Created, flowtext.NodeRegistered)
		for i := len(in.queries) - 1; i >= 0; i-- {
			c := in.queries[i]
			// Only the Node controller's question counts: the Route
			// controller also looks instances up, but it initializes
			// nothing.
			if c.State == cloud.CallDone && c.Error == "" && c.Caller == nodeControllerCaller && !c.Time.Before(n.Created.Truncate(time.Second)) {
				ev[2] = proof(c.Time, flowtext.Call, "action", c.Action, "caller", c.Caller)
				break
			}
		}
		if n.ProviderID != "" {
			ev[3] = proof(time.Time{}, flowtext.NodeWritten, "pid", n.ProviderID, "zone", n.Zone, "type", n.InstanceType)
			if !ev[2].ok() {
				// The query happened before the lab was watching (a
				// restart); the written fields prove it.
				ev[2] = proof(time.Time{}, flowtext.QueryImplied)
			}
			if !n.Tainted() {
				ev[4] = proof(time.Time{}, flowtext.TaintRemoved, "taint", cloudproviderapi.TaintExternalCloudProvider)
			}
		}
	}
	if p := in.firstPod; p != nil {
		ev[5] = proof(p.Scheduled, flowtext.PodScheduled, "pod", p.Namespace+"/"+p.Name)
	}

	var stuck *Stuck
	_, done := strip(nodeStepKeys, ev, nil, firstSeen)
	switch {
	case in.instance != nil && in.instance.State != cloud.InstanceRunning && done < 6:
		stuck = newStuck(ReasonInstanceNotRunning, flowtext.StuckInstanceNotRunning, i18n.Args{"id": in.instance.ID, "state": string(in.instance.State)})
	case done >= 2 && done < 5 && !in.controllers["node"]:
		stuck = newStuck(ReasonNoNodeController, flowtext.StuckNoNodeController, nil)
	}
	f.Steps, f.Step = strip(nodeStepKeys, ev, stuck, firstSeen)
	if f.Step < 6 {
		f.Stuck = stuck
	}
	return f
}
