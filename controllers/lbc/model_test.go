package lbc

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func svc(ns, name, uid string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Annotations: map[string]string{AnnotationTargetType: "ip"}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(LoadBalancerClass), Ports: ports},
	}
}

func slice(portName string, port int32, eps map[string]*bool) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	ips := make([]string, 0, len(eps))
	for ip := range eps {
		ips = append(ips, ip)
	}
	slices.Sort(ips)
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: eps[ip]}})
	}
	return es
}

func TestLoadBalancerName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9-]{0,30}[a-zA-Z0-9]$`)
	a := LoadBalancerName(svc("default", "web", "u1"))
	b := LoadBalancerName(svc("default", "web", "u2"))
	long := LoadBalancerName(svc("a-very-long-namespace-name", "and-a-very-long-service-name", "u3"))
	for _, n := range []string{a, b, long} {
		if !valid.MatchString(n) || !strings.HasPrefix(n, "k8s-") {
			t.Errorf("name %q is not a valid ELB name", n)
		}
	}
	if a == b {
		t.Error("different UIDs give the same name")
	}
	if a != LoadBalancerName(svc("default", "web", "u1")) {
		t.Error("name is not stable")
	}
	if !strings.HasPrefix(a, "k8s-default-web-") {
		t.Errorf("name %q should start with k8s-default-web-", a)
	}
}

func TestBuildModel(t *testing.T) {
	http := v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("web")}
	for _, tc := range []struct {
		name      string
		svc       *v1.Service
		slices    []*discoveryv1.EndpointSlice
		listeners []cloud.Listener
		targets   []string
		err       string
	}{
		{
			name: "ready endpoints only, named port resolved from the slice",
			svc:  svc("ns", "web", "u", http),
			slices: []*discoveryv1.EndpointSlice{slice("http", 8080, map[string]*bool{
				"10.0.0.1": ptr.To(true), "10.0.0.2": nil, "10.0.0.3": ptr.To(false),
			})},
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 8080}},
			targets:   []string{"10.0.0.1:8080", "10.0.0.2:8080"},
		},
		{
			name: "two slices, duplicates merged",
			svc:  svc("ns", "web", "u", http),
			slices: []*discoveryv1.EndpointSlice{
				slice("http", 8080, map[string]*bool{"10.0.0.1": ptr.To(true)}),
				slice("http", 8080, map[string]*bool{"10.0.0.1": ptr.To(true), "10.0.0.9": ptr.To(true)}),
				slice("other", 9999, map[string]*bool{"10.0.0.5": ptr.To(true)}),
			},
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 8080}},
			targets:   []string{"10.0.0.1:8080", "10.0.0.9:8080"},
		},
		{
			name:      "no endpoints, numeric targetPort",
			svc:       svc("ns", "web", "u", v1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(9000)}),
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 9000}},
		},
		{
			name:      "no endpoints, named targetPort falls back to the port",
			svc:       svc("ns", "web", "u", http),
			listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 80}},
		},
		{
			name: "SCTP refused",
			svc:  svc("ns", "web", "u", v1.ServicePort{Port: 80, Protocol: v1.ProtocolSCTP}),
			err:  "SCTP",
		},
		{
			name: "no ports",
			svc:  svc("ns", "web", "u"),
			err:  "no ports",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := BuildModel(tc.svc, tc.slices, nil, "ccmlab")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Listeners, tc.listeners) {
				t.Errorf("listeners = %v, want %v", m.Listeners, tc.listeners)
			}
			var got []string
			for _, tg := range m.Targets {
				got = append(got, tg.ID+":"+itoa(tg.Port))
			}
			if !slices.Equal(got, tc.targets) {
				t.Errorf("targets = %v, want %v", got, tc.targets)
			}
			if m.HealthCheck.Protocol != "TCP" || m.HealthCheck.Port != tc.listeners[0].TargetPort {
				t.Errorf("health check = %+v", m.HealthCheck)
			}
			if m.Tags[TagStack] != "ns/web" || m.Tags[TagCluster] != "ccmlab" {
				t.Errorf("tags = %v", m.Tags)
			}
		})
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestBuildModelTargetType(t *testing.T) {
	node := func(name, providerID string, labels map[string]string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: providerID}}
	}
	nodes := []*v1.Node{
		node("a", "aws:///ap-northeast-1a/i-0a", nil),
		node("b", "aws:///ap-northeast-1c/i-0b", map[string]string{v1.LabelNodeExcludeBalancers: "true"}),
		node("c", "", nil),
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        cloud.TargetType
		targets     []cloud.Target
	}{
		{"default is instance", nil, cloud.TargetTypeInstance, []cloud.Target{{ID: "i-0a", Port: 30080}}},
		{"nlb-target-type ip", map[string]string{AnnotationTargetType: "ip"}, cloud.TargetTypeIP, []cloud.Target{{ID: "10.0.1.5", Port: 8080}}},
		{"type nlb-ip", map[string]string{AnnotationType: "nlb-ip"}, cloud.TargetTypeIP, []cloud.Target{{ID: "10.0.1.5", Port: 8080}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc("ns", "web", "u", v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP})
			s.Annotations = tc.annotations
			m, err := BuildModel(s, []*discoveryv1.EndpointSlice{slice("http", 8080, map[string]*bool{"10.0.1.5": ptr.To(true)})}, nodes, "ccmlab")
			if err != nil {
				t.Fatal(err)
			}
			if m.TargetType != tc.want || !slices.Equal(m.Targets, tc.targets) {
				t.Errorf("model = %s %v, want %s %v", m.TargetType, m.Targets, tc.want, tc.targets)
			}
		})
	}
}

func TestIsExternal(t *testing.T) {
	for v, want := range map[string]bool{"external": true, "nlb-ip": true, "nlb": false, "": false} {
		if got := IsExternal(map[string]string{AnnotationType: v}); got != want {
			t.Errorf("IsExternal(%q) = %v, want %v", v, got, want)
		}
	}
}
