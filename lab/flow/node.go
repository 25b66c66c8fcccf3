package flow

import (
	"fmt"
	"time"

	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

var nodeStepKeys = []string{"launched", "registered", "queried", "written", "untainted", "scheduled"}

// NodeStepKeys returns the node-initialization step keys in order.
func NodeStepKeys() []string { return append([]string(nil), nodeStepKeys...) }

// NodeFlow is where one node stands in its initialization.
type NodeFlow struct {
	Node       string `json:"node"`
	InstanceID string `json:"instanceID,omitempty"`
	Step       int    `json:"step"`
	Steps      []Step `json:"steps"`
	Stuck      *Stuck `json:"stuck,omitempty"`
}

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
		ev[0] = evidence{in.instance.LaunchTime, fmt.Sprintf("instance %s (%s, %s)", in.instance.ID, in.instance.InstanceType, in.instance.Zone)}
	}
	if n := in.node; n != nil {
		ev[1] = evidence{n.Created, "Node registered by the kubelet with the uninitialized taint"}
		for i := len(in.queries) - 1; i >= 0; i-- {
			c := in.queries[i]
			// Only the Node controller's question counts: the Route
			// controller also looks instances up, but it initializes
			// nothing.
			if c.State == cloud.CallDone && c.Error == "" && c.Caller == "node-controller" && !c.Time.Before(n.Created.Truncate(time.Second)) {
				ev[2] = evidence{c.Time, "call " + c.Action + " by " + c.Caller}
				break
			}
		}
		if n.ProviderID != "" {
			ev[3] = evidence{time.Time{}, fmt.Sprintf("providerID %s, zone %s, instance-type %s", n.ProviderID, n.Zone, n.InstanceType)}
			if !ev[2].ok() {
				// The query happened before the lab was watching (a
				// restart); the written fields prove it.
				ev[2] = evidence{time.Time{}, "implied by the providerID"}
			}
			if !n.Tainted() {
				ev[4] = evidence{time.Time{}, "taint " + cloudproviderapi.TaintExternalCloudProvider + " removed"}
			}
		}
	}
	if p := in.firstPod; p != nil {
		ev[5] = evidence{p.Scheduled, "Pod " + p.Namespace + "/" + p.Name + " scheduled here"}
	}

	var stuck *Stuck
	_, done := strip(nodeStepKeys, ev, nil, firstSeen)
	switch {
	case in.instance != nil && in.instance.State != cloud.InstanceRunning && done < 6:
		stuck = &Stuck{ReasonInstanceNotRunning, fmt.Sprintf("instance %s is %s", in.instance.ID, in.instance.State)}
	case done >= 2 && done < 5 && !in.controllers["node"]:
		stuck = &Stuck{ReasonNoNodeController, "no Node controller is running: the Node stays Ready but tainted, and Pods stay Pending"}
	}
	f.Steps, f.Step = strip(nodeStepKeys, ev, stuck, firstSeen)
	if f.Step < 6 {
		f.Stuck = stuck
	}
	return f
}
