package dataplane

import (
	"cmp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

func svcKey(s *v1.Service) string { return s.Namespace + "/" + s.Name }

func protoOf(p v1.Protocol) v1.Protocol {
	return cmp.Or(v1.Protocol(strings.ToUpper(string(p))), v1.ProtocolTCP)
}

func externalPolicy(s *v1.Service) string {
	if s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		return PolicyLocal
	}
	return PolicyCluster
}

func internalPolicy(s *v1.Service) string {
	if p := s.Spec.InternalTrafficPolicy; p != nil && *p == v1.ServiceInternalTrafficPolicyLocal {
		return PolicyLocal
	}
	return PolicyCluster
}

// nodePortOf returns the port of svc exposed on NodePort port.
func nodePortOf(svc *v1.Service, port int32, proto v1.Protocol) *v1.ServicePort {
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.NodePort == port && protoOf(sp.Protocol) == protoOf(proto) {
			return sp
		}
	}
	return nil
}

// clusterIPPortOf returns the port of svc reached at ip:port.
func clusterIPPortOf(svc *v1.Service, ip string, port int32, proto v1.Protocol) *v1.ServicePort {
	if !slices.Contains(clusterIPs(svc), ip) {
		return nil
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.Port == port && protoOf(sp.Protocol) == protoOf(proto) {
			return sp
		}
	}
	return nil
}

func clusterIPs(svc *v1.Service) []string {
	var out []string
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip != "" && ip != v1.ClusterIPNone && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}
