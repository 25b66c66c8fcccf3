package kubevirt

import (
	"hash/fnv"
	"strings"
)

// A tenant cluster made with Cluster API and its KubeVirt provider names
// its Machines, and so their VMIs and Nodes,
// <cluster>-control-plane-<5> (KubeadmControlPlane) and
// <cluster>-md-0-<machineset>-<5> (MachineDeployment md-0), the suffixes
// from Kubernetes' random alphabet; the chapter's nodes are
// tenant-xxxx-control-plane-abcde. The lab derives the suffixes from the
// instance's ID, so a name is stable across restarts and unique per VM.

// alphabet is k8s.io/apimachinery's util/rand alphanums (no vowels, no
// 0, 1, 3: no words, no look-alikes).
const alphabet = "bcdfghjklmnpqrstvwxz2456789"

func suffix(seed string, n int) string {
	h := fnv.New64a()
	h.Write([]byte(seed))
	x := h.Sum64()
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[x%uint64(len(alphabet))])
		x /= uint64(len(alphabet))
	}
	return b.String()
}

// ClusterName is the tenant cluster's name for a lab whose cloud is
// clusterID: tenant-<4>.
func ClusterName(clusterID string) string { return "tenant-" + suffix("cluster/"+clusterID, 4) }

// NodeName is the name of the Machine (VMI, Node) on instance id of
// cluster.
func NodeName(cluster, id string, controlPlane bool) string {
	if controlPlane {
		return cluster + "-control-plane-" + suffix(id, 5)
	}
	return cluster + "-md-0-" + suffix("machineset/"+cluster, 5) + "-" + suffix(id, 5)
}

// InfraNodeName is the management cluster's node in zone, where the
// launcher Pods of that zone's VMs run (VMI status.nodeName) and the CCM's
// Pod of the first zone.
func InfraNodeName(zone string) string { return "infra-" + zone }
