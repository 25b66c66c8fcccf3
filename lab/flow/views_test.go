package flow

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The display string is for the page; code reads PortSpecs.
func TestNewServiceViewPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports []corev1.ServicePort
		shown string
		specs []ServicePort
	}{
		{"none", nil, "<none>", []ServicePort{}},
		{"cluster ip", []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}, "80/TCP", []ServicePort{{Protocol: "TCP", Port: 80}}},
		{"node ports", []corev1.ServicePort{
			{Name: "http", Port: 80, NodePort: 31234, Protocol: corev1.ProtocolTCP},
			{Name: "dns", Port: 53, NodePort: 31000, Protocol: corev1.ProtocolUDP},
		}, "80:31234/TCP,53:31000/UDP", []ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 31234}, {Name: "dns", Protocol: "UDP", Port: 53, NodePort: 31000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewServiceView(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: tc.ports}})
			if v.Ports != tc.shown {
				t.Errorf("Ports = %q, want %q", v.Ports, tc.shown)
			}
			if !slices.Equal(v.PortSpecs, tc.specs) {
				t.Errorf("PortSpecs = %+v, want %+v", v.PortSpecs, tc.specs)
			}
		})
	}
}
