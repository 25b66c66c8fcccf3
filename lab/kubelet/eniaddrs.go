package kubelet

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// On the vpc-cni profile the kubelets also play the VPC CNI's ipamd: a Pod's
// VPC address is put on its node's network interface as a secondary private
// IPv4 address (lab/cloud's AssignPodAddress), and taken off when the Pod
// goes, so that DescribeInstances and DescribeNetworkInterfaces show it
// where the AWS Load Balancer Controller looks for a Pod's ENI before it
// registers an ip target (pkg/networking/pod_eni_info_resolver.go in
// sigs.k8s.io/aws-load-balancer-controller/v3 v3.6.2).

// assignVPCAddress records addr on the instance of pod's node; a node with
// no instance (a stray Node object) has no interface to put it on.
func (m *Manager) assignVPCAddress(pod *v1.Pod, addr netip.Addr) {
	if m.vpcPool == nil {
		return
	}
	id := m.instanceOfNode(pod.Spec.NodeName)
	if id == "" {
		return
	}
	if err := m.cfg.Cloud.AssignPodAddress(id, addr); err != nil {
		m.log.Warn("pod address not put on the node's interface", "pod", cache.MetaObjectToName(pod).String(), "ip", addr, "instance", id, "err", err)
	}
}

// releasePodIP frees pod's address in its pool and, on the vpc-cni
// profile, takes it off its node's interface; releasing twice is harmless.
func (m *Manager) releasePodIP(pod *v1.Pod) {
	p := m.pool(pod.Spec.NodeName)
	addr, had := p.lookup(pod.UID)
	p.release(pod.UID)
	if !had || m.vpcPool == nil {
		return
	}
	if id := m.instanceOfNode(pod.Spec.NodeName); id != "" {
		m.cfg.Cloud.UnassignPodAddress(id, addr)
	}
}

// instanceOfNode is the ID of the instance behind a Node name (its private
// DNS name), or "". Before the kubelets start (adoptPodIPs after a
// restart) the cloud's list answers.
func (m *Manager) instanceOfNode(name string) string {
	if k := m.kubeletForNode(name); k != nil {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.inst.ID
	}
	for _, inst := range m.cfg.Cloud.Instances() {
		if inst.PrivateDNSName == name && inst.State != cloud.InstanceTerminated {
			return inst.ID
		}
	}
	return ""
}
