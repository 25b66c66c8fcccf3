package flow

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	cloudproviderapi "k8s.io/cloud-provider/api"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// Well-known names the chapter is about.
const (
	FinalizerLBCleanup = "service.kubernetes.io/load-balancer-cleanup"
	LabelZone          = "topology.kubernetes.io/zone"
	LabelRegion        = "topology.kubernetes.io/region"
	LabelInstanceType  = "node.kubernetes.io/instance-type"
)

// NodeView is what the page shows of a Node.
type NodeView struct {
	Name         string    `json:"name"`
	Ready        string    `json:"ready"` // True, False or Unknown, as kubectl's STATUS derives from it
	Taints       []string  `json:"taints"`
	ProviderID   string    `json:"providerID"`
	Region       string    `json:"region"`
	Zone         string    `json:"zone"`
	InstanceType string    `json:"instanceType"`
	PodCIDR      string    `json:"podCIDR"`
	InternalIP   string    `json:"internalIP"`
	Addresses    []string  `json:"addresses"` // "InternalIP=10.0.1.5"
	Created      time.Time `json:"created"`

	// What the taints mean, decided here so the page holds no taint key
	// of its own: Uninitialized and Shutdown are the cloud provider's
	// taints as they stand in Taints ("" when the node has none), so the
	// page can mark that chip; ControlPlane is kubeadm's control-plane
	// taint, which keeps the lab's Pods off that node.
	Uninitialized string `json:"uninitialized,omitempty"`
	Shutdown      string `json:"shutdown,omitempty"`
	ControlPlane  bool   `json:"controlPlane,omitempty"`

	// lbExcluded: the Service controller leaves this node out of load
	// balancers (see InLBNodeSet).
	lbExcluded bool
}

// InLBNodeSet reports whether upstream's Service controller (k8s.io/
// cloud-provider v0.37 controllers/service, stableNodeSetPredicates)
// hands this node to the cloud as a load balancer backend: not being
// deleted, not labelled node.kubernetes.io/exclude-from-external-load-balancers
// (any value but one that parses as false excludes), and not tainted
// ToBeDeletedByClusterAutoscaler. Readiness is not among them, nor is
// being initialized.
func (n NodeView) InLBNodeSet() bool { return !n.lbExcluded }

// ToBeDeletedTaint is the cluster autoscaler's taint the Service controller
// leaves nodes out for.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

func excludedFromLB(n *corev1.Node) bool {
	if !n.DeletionTimestamp.IsZero() {
		return true
	}
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		if b, err := strconv.ParseBool(v); err != nil || b {
			return true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return true
		}
	}
	return false
}

// Tainted reports whether the node still waits for the cloud: it carries
// the uninitialized taint (any value, any effect), the one the Node
// controller removes once the cloud has answered.
func (n NodeView) Tainted() bool { return n.Uninitialized != "" }

// TaintControlPlane is the taint kubeadm (and this lab) puts on
// control-plane nodes.
const TaintControlPlane = "node-role.kubernetes.io/control-plane"

// UninitializedTaint is the taint as the kubelet puts it on with
// --cloud-provider=external (k8s.io/kubernetes pkg/kubelet/kubelet_node_status.go,
// value "true", effect NoSchedule), in the form Taints uses.
const UninitializedTaint = cloudproviderapi.TaintExternalCloudProvider + "=true:NoSchedule"

// NewNodeView extracts the view from a Node.
func NewNodeView(n *corev1.Node) NodeView {
	v := NodeView{
		Name:         n.Name,
		Ready:        "Unknown",
		Taints:       []string{},
		Addresses:    []string{},
		ProviderID:   n.Spec.ProviderID,
		Region:       n.Labels[LabelRegion],
		Zone:         n.Labels[LabelZone],
		InstanceType: n.Labels[LabelInstanceType],
		PodCIDR:      n.Spec.PodCIDR,
		Created:      n.CreationTimestamp.Time,
		lbExcluded:   excludedFromLB(n),
	}
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		s += ":" + string(t.Effect)
		v.Taints = append(v.Taints, s)
		switch t.Key {
		case cloudproviderapi.TaintExternalCloudProvider:
			v.Uninitialized = s
		case cloudproviderapi.TaintNodeShutdown:
			v.Shutdown = s
		case TaintControlPlane:
			v.ControlPlane = true
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			v.Ready = string(c.Status)
		}
	}
	for _, a := range n.Status.Addresses {
		v.Addresses = append(v.Addresses, string(a.Type)+"="+a.Address)
		if a.Type == corev1.NodeInternalIP && v.InternalIP == "" {
			v.InternalIP = a.Address
		}
	}
	return v
}

// PodView is what the page shows of a Pod.
type PodView struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Node      string    `json:"node"`
	Phase     string    `json:"phase"`
	Ready     bool      `json:"ready"`
	IP        string    `json:"ip"`
	Image     string    `json:"image"`
	Reason    string    `json:"reason,omitempty"` // why it is Pending, from the scheduler
	Scheduled time.Time `json:"scheduled,omitzero"`
}

// NewPodView extracts the view from a Pod.
func NewPodView(p *corev1.Pod) PodView {
	v := PodView{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), IP: p.Status.PodIP}
	if len(p.Spec.Containers) > 0 {
		v.Image = p.Spec.Containers[0].Image
	}
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			v.Ready = c.Status == corev1.ConditionTrue
		case corev1.PodScheduled:
			if c.Status == corev1.ConditionTrue {
				v.Scheduled = c.LastTransitionTime.Time
			} else if c.Message != "" {
				v.Reason = c.Message
			}
		}
	}
	if p.DeletionTimestamp != nil {
		v.Phase = "Terminating"
	}
	return v
}

// ServiceView is what the page shows of a Service: the columns of
// `kubectl get svc`, plus what the flow needs.
type ServiceView struct {
	Namespace             string        `json:"namespace"`
	Name                  string        `json:"name"`
	UID                   string        `json:"uid"`
	Type                  string        `json:"type"`
	ClusterIP             string        `json:"clusterIP"`
	ExternalIP            string        `json:"externalIP"` // "<pending>" exactly as kubectl prints it
	Ports                 string        `json:"ports"`      // "80:31234/TCP", for the page
	PortSpecs             []ServicePort `json:"portSpecs"`  // the same, for code
	LoadBalancerClass     string        `json:"loadBalancerClass,omitempty"`
	ExternalTrafficPolicy string        `json:"externalTrafficPolicy,omitempty"`
	HealthCheckNodePort   int32         `json:"healthCheckNodePort,omitempty"`
	Finalizers            []string      `json:"finalizers"`
	Ingress               []string      `json:"ingress"`
	Created               time.Time     `json:"created"`
	Deleting              bool          `json:"deleting,omitempty"`
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	NodePort int32  `json:"nodePort,omitempty"` // 0: none allocated
}

// Key is namespace/name.
func (s ServiceView) Key() string { return s.Namespace + "/" + s.Name }

// NewServiceView extracts the view from a Service.
func NewServiceView(s *corev1.Service) ServiceView {
	v := ServiceView{
		Namespace: s.Namespace, Name: s.Name, UID: string(s.UID), Type: string(s.Spec.Type),
		ClusterIP: s.Spec.ClusterIP, Finalizers: append([]string{}, s.Finalizers...), Ingress: []string{}, PortSpecs: []ServicePort{},
		Created: s.CreationTimestamp.Time, Deleting: s.DeletionTimestamp != nil,
		HealthCheckNodePort: s.Spec.HealthCheckNodePort,
	}
	if s.Spec.LoadBalancerClass != nil {
		v.LoadBalancerClass = *s.Spec.LoadBalancerClass
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort {
		v.ExternalTrafficPolicy = string(s.Spec.ExternalTrafficPolicy)
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			v.Ingress = append(v.Ingress, in.IP)
		} else if in.Hostname != "" {
			v.Ingress = append(v.Ingress, in.Hostname)
		}
	}
	v.ExternalIP = externalIP(s, v.Ingress)
	var ports []string
	for _, p := range s.Spec.Ports {
		v.PortSpecs = append(v.PortSpecs, ServicePort{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port, NodePort: p.NodePort})
		if p.NodePort != 0 {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	v.Ports = strings.Join(ports, ",")
	if v.Ports == "" {
		v.Ports = "<none>"
	}
	return v
}

// externalIP follows kubectl's printer: a LoadBalancer without ingress is
// "<pending>", anything else without external IPs is "<none>".
func externalIP(s *corev1.Service, ingress []string) string {
	ips := append(append([]string{}, s.Spec.ExternalIPs...), ingress...)
	if len(ips) > 0 {
		return strings.Join(ips, ",")
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return "<pending>"
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return s.Spec.ExternalName
	}
	return "<none>"
}

// EventView is a Kubernetes Event as the page lists it.
type EventView struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`   // of the object the event is about
	Object    string    `json:"object"` // its name
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Source    string    `json:"source"`
	Count     int32     `json:"count"`
	Time      time.Time `json:"time"`
	// UID is the object's UID (the flow matches a Service's events by
	// it) and FirstTime when the event first happened; neither goes to
	// the page.
	UID       string    `json:"-"`
	FirstTime time.Time `json:"-"`
}

// First is when the event first happened (Time is its latest repeat).
func (e EventView) First() time.Time {
	if !e.FirstTime.IsZero() && e.FirstTime.Before(e.Time) {
		return e.FirstTime
	}
	return e.Time
}

// NewEventView extracts the view from an events.k8s.io Event.
func NewEventView(e *eventsv1.Event) EventView {
	v := EventView{
		Namespace: e.Namespace, Name: e.Name, Kind: e.Regarding.Kind, Object: e.Regarding.Name,
		Type: e.Type, Reason: e.Reason, Message: e.Note, Source: e.ReportingController, Count: 1,
		UID: string(e.Regarding.UID),
	}
	for _, t := range []time.Time{e.EventTime.Time, e.DeprecatedFirstTimestamp.Time, e.CreationTimestamp.Time} {
		if v.FirstTime.IsZero() && !t.IsZero() {
			v.FirstTime = t
		}
	}
	if v.Source == "" {
		v.Source = e.DeprecatedSource.Component
	}
	if e.DeprecatedCount > 0 {
		v.Count = e.DeprecatedCount
	}
	if e.Series != nil {
		v.Count = e.Series.Count
		v.Time = e.Series.LastObservedTime.Time
	}
	for _, t := range []time.Time{e.DeprecatedLastTimestamp.Time, e.EventTime.Time, e.DeprecatedFirstTimestamp.Time, e.CreationTimestamp.Time} {
		if v.Time.IsZero() && !t.IsZero() {
			v.Time = t
		}
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
