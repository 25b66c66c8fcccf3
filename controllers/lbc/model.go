package lbc

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Tags on the load balancers this controller makes, named like the real
// controller's so students recognise them in the cloud view.
const (
	TagStack    = "service.k8s.aws/stack"
	TagResource = "service.k8s.aws/resource"
	TagCluster  = "elbv2.k8s.aws/cluster"
)

// Model is the load balancer a Service should have.
type Model struct {
	Name        string
	TargetType  cloud.TargetType
	Listeners   []cloud.Listener
	Targets     []cloud.Target // sorted by ID, then Port; Health unset
	HealthCheck cloud.HealthCheck
	Tags        map[string]string
}

// TargetGroupName is the target group of listener l: like the load
// balancer's name, with the listener's port, protocol, target port and the
// target type in the hash, so a change of any of them makes a new target
// group (the listener is then pointed at it and the old one deleted), as
// the real controller does.
func TargetGroupName(svc *v1.Service, l cloud.Listener, tt cloud.TargetType) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%s/%s:%d/%d/%s", svc.UID, svc.Namespace, svc.Name, l.Protocol, l.Port, l.TargetPort, tt))
	return "k8s-" + cut(svc.Namespace, 8) + "-" + cut(svc.Name, 8) + "-" + hex.EncodeToString(sum[:])[:10]
}

// Scheme is the load balancer's scheme: internal with the scheme
// annotation "internal", internet-facing otherwise. (The real controller
// has made internal NLBs by default since v2.2; the lab keeps
// internet-facing so that the page's requests from outside reach them.)
func Scheme(svc *v1.Service) string {
	if svc.Annotations[AnnotationScheme] == cloud.SchemeInternal {
		return cloud.SchemeInternal
	}
	return cloud.SchemeInternetFacing
}

// LoadBalancerName is "k8s-<namespace>-<name>-<hash>" cut to ELB's 32
// characters: readable in the cloud view, unique through a hash of the UID.
func LoadBalancerName(svc *v1.Service) string { return ccmnames.LBCLoadBalancerName(svc) }

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// BuildModel works out listeners, targets and health check from the
// Service, its EndpointSlices and the nodes. With ip targets the targets
// are the ready endpoints' addresses on the port each Service port
// resolves to; with instance targets (the default) they are the nodes'
// instances on the NodePort, the listeners forwarding to the NodePort.
func BuildModel(svc *v1.Service, endpointSlices []*discoveryv1.EndpointSlice, nodes []*v1.Node, clusterName string) (Model, error) {
	m := Model{
		Name:       LoadBalancerName(svc),
		TargetType: TargetType(svc),
		Tags: map[string]string{
			TagStack:    svc.Namespace + "/" + svc.Name,
			TagResource: "LoadBalancer",
			TagCluster:  clusterName,
		},
	}
	if len(svc.Spec.Ports) == 0 {
		return m, fmt.Errorf("service %s/%s has no ports", svc.Namespace, svc.Name)
	}
	seen := map[cloud.Target]bool{}
	for _, sp := range svc.Spec.Ports {
		proto := cmp.Or(sp.Protocol, v1.ProtocolTCP)
		if proto != v1.ProtocolTCP && proto != v1.ProtocolUDP {
			return m, fmt.Errorf("service %s/%s port %d: protocol %s is not supported (TCP and UDP are)", svc.Namespace, svc.Name, sp.Port, proto)
		}
		var resolved int32
		for _, es := range endpointSlices {
			port, ok := slicePort(es, sp.Name, proto)
			if !ok {
				continue
			}
			if resolved == 0 {
				resolved = port
			}
			for _, ep := range es.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, addr := range ep.Addresses {
					t := cloud.Target{ID: addr, Port: port}
					if !seen[t] {
						seen[t] = true
						m.Targets = append(m.Targets, t)
					}
				}
			}
		}
		targetPort := resolved
		if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal > 0 {
			targetPort = sp.TargetPort.IntVal
		}
		if targetPort == 0 {
			targetPort = sp.Port
		}
		m.Listeners = append(m.Listeners, cloud.Listener{Protocol: string(proto), Port: sp.Port, TargetPort: targetPort})
	}
	if m.TargetType == cloud.TargetTypeInstance {
		return instanceModel(m, svc, nodes)
	}
	slices.SortFunc(m.Targets, func(a, b cloud.Target) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Port, b.Port))
	})
	// NLB's default for ip targets: TCP on the traffic port.
	m.HealthCheck = cloud.HealthCheck{Protocol: "TCP", Port: m.Listeners[0].TargetPort}
	return m, nil
}

// slicePort finds the port an EndpointSlice gives for a Service port name.
func slicePort(es *discoveryv1.EndpointSlice, name string, proto v1.Protocol) (int32, bool) {
	for _, p := range es.Ports {
		pname := ""
		if p.Name != nil {
			pname = *p.Name
		}
		pproto := v1.ProtocolTCP
		if p.Protocol != nil {
			pproto = *p.Protocol
		}
		if pname == name && pproto == proto && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// instanceModel: every node's instance on the NodePort of each port, like
// the real controller's instance mode (nodes labelled
// node.kubernetes.io/exclude-from-external-load-balancers and nodes without
// a providerID left out); the health check probes the traffic port.
func instanceModel(m Model, svc *v1.Service, nodes []*v1.Node) (Model, error) {
	m.Targets = nil
	for i, sp := range svc.Spec.Ports {
		if sp.NodePort == 0 {
			return m, fmt.Errorf("service %s/%s port %d has no NodePort yet", svc.Namespace, svc.Name, sp.Port)
		}
		m.Listeners[i].TargetPort = sp.NodePort
	}
	for _, n := range nodes {
		if _, excluded := n.Labels[v1.LabelNodeExcludeBalancers]; excluded || n.DeletionTimestamp != nil {
			continue
		}
		id := instanceID(n.Spec.ProviderID)
		if id == "" {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			m.Targets = append(m.Targets, cloud.Target{ID: id, Port: sp.NodePort})
		}
	}
	slices.SortFunc(m.Targets, func(a, b cloud.Target) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Port, b.Port))
	})
	m.Targets = slices.Compact(m.Targets)
	m.HealthCheck = cloud.HealthCheck{Protocol: "TCP", Port: m.Listeners[0].TargetPort}
	return m, nil
}

// instanceID is the EC2 instance ID at the end of an aws:///zone/i-...
// providerID ("" for any other form).
func instanceID(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 || !strings.HasPrefix(providerID[i+1:], "i-") {
		return ""
	}
	return providerID[i+1:]
}
