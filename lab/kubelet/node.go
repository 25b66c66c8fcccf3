package kubelet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

const (
	kubeletVersion = "v1.37.2" // the embedded control plane's version: no skew to explain
	// leaseDurationSeconds is the kubelet default. The node-lifecycle
	// controller judges a node by RenewTime against its own grace period,
	// not by this, so the lab's short grace period still applies.
	leaseDurationSeconds = 40
	kubeletPort          = 10250
)

// Every node has the shape of the default instance type (m5.large: 2 vCPU,
// 8 GiB). Allocatable subtracts what a kubelet with default flags keeps
// back: the hard eviction thresholds memory.available<100Mi and
// nodefs.available<10%, no system or kube reservations.
func nodeCapacity() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("2"),
		v1.ResourceMemory:           resource.MustParse("8Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
}

func nodeAllocatable() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("2"),
		v1.ResourceMemory:           resource.MustParse("8092Mi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("18Gi"),
	}
}

// stableHex derives IDs that stay the same for an instance across lab
// restarts, as a machine ID does across reboots.
func stableHex(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func nodeInfo(inst cloud.Instance, bootID string) v1.NodeSystemInfo {
	id := stableHex("machine", inst.ID)
	return v1.NodeSystemInfo{
		MachineID: id[:32],
		// EC2 system UUIDs start with "ec2"; tools use that to detect AWS.
		SystemUUID:              fmt.Sprintf("ec2%s-%s-%s-%s-%s", id[:5], id[5:9], id[9:13], id[13:17], id[17:29]),
		BootID:                  bootID,
		KernelVersion:           "6.8.0-1021-aws",
		OSImage:                 "Ubuntu 24.04.2 LTS",
		ContainerRuntimeVersion: "containerd://2.1.4",
		KubeletVersion:          kubeletVersion,
		OperatingSystem:         "linux",
		Architecture:            "amd64",
	}
}

type wantCondition struct {
	typ     v1.NodeConditionType
	status  v1.ConditionStatus
	reason  string
	message string
}

// healthyConditions are what a kubelet with nothing wrong reports, in a
// real kubelet's order.
func healthyConditions() [4]wantCondition {
	return [4]wantCondition{
		{v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{v1.NodeReady, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
	}
}

// nodeConditions builds the conditions to write at now. A condition that
// already has the wanted status keeps its lastTransitionTime, so "Ready
// since" in kubectl describe means what it says.
func nodeConditions(current *v1.Node, now metav1.Time) []v1.NodeCondition {
	want := healthyConditions()
	out := make([]v1.NodeCondition, 0, len(want))
	for _, w := range want {
		c := v1.NodeCondition{
			Type: w.typ, Status: w.status, Reason: w.reason, Message: w.message,
			LastHeartbeatTime: now, LastTransitionTime: now,
		}
		if old := findCondition(current, w.typ); old != nil && old.Status == w.status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

func findCondition(n *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	if n == nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// conditionsDiffer reports whether n shows anything but a healthy kubelet,
// for example Ready=Unknown written by the node-lifecycle controller while
// the instance was stopped.
func conditionsDiffer(n *v1.Node) bool {
	for _, w := range healthyConditions() {
		c := findCondition(n, w.typ)
		if c == nil || c.Status != w.status || c.Reason != w.reason {
			return true
		}
	}
	return false
}

// newNode is the Node a kubelet with --cloud-provider=external registers:
// no providerID, no addresses and the uninitialized taint, all of which
// the CCM's Node controller is there to settle.
func newNode(inst cloud.Instance, bootID string, now metav1.Time) *v1.Node {
	name := inst.PrivateDNSName
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				v1.LabelHostname:   name,
				v1.LabelOSStable:   "linux",
				v1.LabelArchStable: "amd64",
				// The beta twins a real kubelet still writes at
				// registration (kubelet_node_status.go initialNode);
				// without them the node-lifecycle controller patches
				// them in, one more write per joining Node.
				kubeletapis.LabelOS:   "linux",
				kubeletapis.LabelArch: "amd64",
			},
			Annotations: map[string]string{
				// Set by every kubelet with the default
				// --enable-controller-attach-detach.
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: v1.NodeSpec{
			Taints: []v1.Taint{kube.UninitializedTaint()},
		},
		Status: v1.NodeStatus{
			Capacity:        nodeCapacity(),
			Allocatable:     nodeAllocatable(),
			Conditions:      nodeConditions(nil, now),
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: kubeletPort}},
			NodeInfo:        nodeInfo(inst, bootID),
		},
	}
	if IsControlPlane(inst) {
		asControlPlane(n) // staticpods.go
	}
	return n
}

// statusPatch is a strategic merge patch for the status subresource. It
// names only what the kubelet owns, so addresses written by the CCM are
// left alone and there is no resourceVersion to conflict on; conditions
// merge by type. full adds what a (re)starting kubelet reports once.
func statusPatch(current *v1.Node, inst cloud.Instance, bootID string, now metav1.Time, full bool) ([]byte, error) {
	status := map[string]any{"conditions": nodeConditions(current, now)}
	if full {
		status["capacity"] = nodeCapacity()
		status["allocatable"] = nodeAllocatable()
		status["daemonEndpoints"] = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: kubeletPort}}
		status["nodeInfo"] = nodeInfo(inst, bootID)
	}
	return json.Marshal(map[string]any{"status": status})
}

// newLease is the node's heartbeat object. The owner reference lets the
// garbage collector remove it with the Node, as for a real kubelet.
func newLease(name string, nodeUID types.UID, now metav1.MicroTime) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds),
			RenewTime:            &now,
		},
	}
	setLeaseOwner(l, name, nodeUID)
	return l
}

func setLeaseOwner(l *coordinationv1.Lease, name string, nodeUID types.UID) {
	if nodeUID == "" {
		return
	}
	for _, o := range l.OwnerReferences {
		if o.UID == nodeUID {
			return
		}
	}
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: nodeUID}}
}
