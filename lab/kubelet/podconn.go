package kubelet

import (
	"context"
	"fmt"
	"net"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// PodConnector is a PodRuntime that also takes TCP connections to its
// Pods' IPs: the apiserver's pods and services proxy subresources
// (`kubectl get --raw /api/v1/namespaces/<ns>/pods/<pod>:80/proxy/`,
// upstream's e2e DNS tests reading their results) dial a Pod's IP and
// port through the control plane's egress proxy.
type PodConnector interface {
	// ConnectPod opens a connection to port of pod from source; it
	// refuses a port nothing in the Pod listens on.
	ConnectPod(pod *v1.Pod, port int32, source string) (net.Conn, error)
}

// PodForgetter is a PodRuntime that keeps state for a Pod beyond its
// processes (its emptyDir volumes); the kubelet tells it when the Pod's
// containers are stopped for good.
type PodForgetter interface {
	ForgetPod(uid types.UID)
}

// DialPod connects to addr ("podIP:port") when it is the IP of a Pod
// this lab runs (not a host-network one) on a node whose instance runs,
// and the runtime takes the port. An address that is no such Pod's is
// refused as not the lab's. The connection arrives from the Pod's node's
// address, as through a tunnel agent on that node.
func (m *Manager) DialPod(_ context.Context, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("dial %s: invalid port", addr)
	}
	pod := m.podByIP(host)
	if pod == nil || m.kubeletForNode(pod.Spec.NodeName) == nil {
		// No Pod has the address, or only one on a node the lab does
		// not run (its status written by someone else).
		return nil, notInLab{fmt.Errorf("dial %s: no route to host", addr)}
	}
	pc, ok := m.cfg.Containers.(PodConnector)
	if !ok || m.cfg.Runtime != nil && m.cfg.Runtime.Handles(pod) {
		return nil, fmt.Errorf("dial %s: connection refused (the lab does not serve this Pod's ports)", addr)
	}
	if k := m.kubeletForNode(pod.Spec.NodeName); k == nil || !k.running() {
		return nil, fmt.Errorf("dial %s: i/o timeout (the Pod's node is not running)", addr)
	}
	return pc.ConnectPod(pod, int32(port), pod.Status.HostIP)
}

// podByIP is the running, not host-network Pod whose IP is ip.
func (m *Manager) podByIP(ip string) *v1.Pod {
	if m.pods == nil {
		return nil
	}
	pods, err := m.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	for _, p := range pods {
		if p.Spec.HostNetwork || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		for _, a := range p.Status.PodIPs {
			if a.IP == ip {
				return p
			}
		}
		if p.Status.PodIP == ip {
			return p
		}
	}
	return nil
}
