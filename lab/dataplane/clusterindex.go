package dataplane

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// clusterView is what the rules read from the apiserver. The Dataplane
// implements it over informer caches; tests implement it over plain slices.
// Lookups return nil when nothing matches.
type clusterView interface {
	service(namespace, name string) *v1.Service
	serviceByNodePort(port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort)
	serviceByHealthCheckNodePort(port int32) *v1.Service
	serviceByClusterIP(ip string, port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort)
	endpointSlices(namespace, service string) []*discoveryv1.EndpointSlice
	node(name string) *v1.Node
	nodes() []*v1.Node
	// nodeByInstanceID finds the Node whose spec.providerID ends in
	// "/<id>", as the Node controller writes it ("aws:///zone/i-...").
	nodeByInstanceID(id string) *v1.Node
	pod(namespace, name string) *v1.Pod
	podByIP(ip string) *v1.Pod
}

// Informer indexes, so that a request costs lookups rather than scans.
const (
	indexNodePort    = "nodePort"    // "TCP/30080"
	indexHealthCheck = "healthCheck" // "32000"
	indexClusterIP   = "clusterIP"   // "10.96.0.10/TCP/80"
	indexService     = "service"     // EndpointSlice: "namespace/service"
	indexInstance    = "instance"    // Node: instance ID from spec.providerID
	indexPodIP       = "podIP"       // Pod: each status.podIPs entry
)

func protoPort(proto v1.Protocol, port int32) string {
	return string(protoOf(proto)) + "/" + strconv.Itoa(int(port))
}

func serviceNodePortIndex(obj any) ([]string, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, protoPort(p.Protocol, p.NodePort))
		}
	}
	return out, nil
}

func serviceHealthCheckIndex(obj any) ([]string, error) {
	if s, ok := obj.(*v1.Service); ok && s.Spec.HealthCheckNodePort != 0 {
		return []string{strconv.Itoa(int(s.Spec.HealthCheckNodePort))}, nil
	}
	return nil, nil
}

func serviceClusterIPIndex(obj any) ([]string, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ip := range clusterIPs(s) {
		for _, p := range s.Spec.Ports {
			out = append(out, ip+"/"+protoPort(p.Protocol, p.Port))
		}
	}
	return out, nil
}

func sliceServiceIndex(obj any) ([]string, error) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			return []string{s.Namespace + "/" + name}, nil
		}
	}
	return nil, nil
}

func nodeInstanceIndex(obj any) ([]string, error) {
	if n, ok := obj.(*v1.Node); ok {
		if id := providerInstanceID(n.Spec.ProviderID); id != "" {
			return []string{id}, nil
		}
	}
	return nil, nil
}

// podIPIndex leaves out host-network Pods (their IP is the node's) and
// finished ones (their IP may already belong to a new Pod).
func podIPIndex(obj any) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok || p.Spec.HostNetwork || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return nil, nil
	}
	var out []string
	for _, ip := range p.Status.PodIPs {
		if ip.IP != "" {
			out = append(out, ip.IP)
		}
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		out = append(out, p.Status.PodIP)
	}
	return out, nil
}

// listerView is clusterView over the informer caches.
type listerView struct {
	svc, slices, nodeIdx, pods cache.Indexer
}

func getAs[T any](idx cache.Indexer, key string) *T {
	obj, ok, err := idx.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

func byIndex[T any](idx cache.Indexer, index, value string) []*T {
	objs, err := idx.ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

func (v *listerView) service(ns, name string) *v1.Service {
	return getAs[v1.Service](v.svc, ns+"/"+name)
}

func (v *listerView) serviceByNodePort(port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range byIndex[v1.Service](v.svc, indexNodePort, protoPort(proto, port)) {
		if sp := nodePortOf(s, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (v *listerView) serviceByHealthCheckNodePort(port int32) *v1.Service {
	for _, s := range byIndex[v1.Service](v.svc, indexHealthCheck, strconv.Itoa(int(port))) {
		return s
	}
	return nil
}

func (v *listerView) serviceByClusterIP(ip string, port int32, proto v1.Protocol) (*v1.Service, *v1.ServicePort) {
	for _, s := range byIndex[v1.Service](v.svc, indexClusterIP, ip+"/"+protoPort(proto, port)) {
		if sp := clusterIPPortOf(s, ip, port, proto); sp != nil {
			return s, sp
		}
	}
	return nil, nil
}

func (v *listerView) endpointSlices(ns, service string) []*discoveryv1.EndpointSlice {
	return byIndex[discoveryv1.EndpointSlice](v.slices, indexService, ns+"/"+service)
}

func (v *listerView) node(name string) *v1.Node {
	if name == "" {
		return nil
	}
	return getAs[v1.Node](v.nodeIdx, name)
}

func (v *listerView) nodes() []*v1.Node {
	objs := v.nodeIdx.List()
	out := make([]*v1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*v1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

func (v *listerView) nodeByInstanceID(id string) *v1.Node {
	for _, n := range byIndex[v1.Node](v.nodeIdx, indexInstance, id) {
		return n
	}
	return nil
}

func (v *listerView) pod(ns, name string) *v1.Pod {
	return getAs[v1.Pod](v.pods, ns+"/"+name)
}

// podByIP prefers a Pod that is not being deleted when two share an IP for
// a moment.
func (v *listerView) podByIP(ip string) *v1.Pod {
	var found *v1.Pod
	for _, p := range byIndex[v1.Pod](v.pods, indexPodIP, ip) {
		if found == nil || found.DeletionTimestamp != nil && p.DeletionTimestamp == nil {
			found = p
		}
	}
	return found
}
