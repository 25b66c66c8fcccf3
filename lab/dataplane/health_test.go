package dataplane

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func TestTargetHealth(t *testing.T) {
	httpCheck := &cloud.HealthCheck{Protocol: "HTTP", Port: 32000, Path: "/healthz"}
	tcpCheck := &cloud.HealthCheck{Protocol: "TCP", Port: 30080}
	tests := []struct {
		name       string
		policy     v1.ServiceExternalTrafficPolicy
		check      *cloud.HealthCheck
		mutate     func(w *world)
		lbType     cloud.TargetType
		target     cloud.Target
		want       cloud.TargetHealth
		reasonHas  string
		notJudged  bool
		wantReason string
		wantCode   string
	}{
		{name: "HTTP healthCheckNodePort, node with a local ready Pod", policy: local, check: httpCheck,
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetHealthy},
		{name: "HTTP healthCheckNodePort, node without local Pods", policy: local, check: httpCheck,
			target: cloud.Target{ID: instA, Port: 30080}, want: cloud.TargetUnhealthy, wantReason: reasonNoLocalEndpoints, wantCode: codeCodeMismatch},
		{name: "HTTP healthCheckNodePort, local Pod not ready", policy: local, check: httpCheck,
			mutate: func(w *world) {
				w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "notready"})}
			},
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetUnhealthy, wantReason: reasonNoLocalEndpoints},
		{name: "HTTP check on a port nothing answers", policy: local, check: &cloud.HealthCheck{Protocol: "HTTP", Port: 31234},
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "nothing answers on TCP port 31234", wantCode: codeFailedChecks},
		{name: "TCP check on a port nothing answers", policy: cluster, check: &cloud.HealthCheck{Protocol: "TCP", Port: 31234},
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "nothing answers on TCP port 31234", wantCode: codeFailedChecks},
		{name: "TCP check on a UDP NodePort", policy: cluster, check: &cloud.HealthCheck{Protocol: "TCP", Port: 30080},
			mutate: func(w *world) { w.objs.services[0].Spec.Ports[0].Protocol = v1.ProtocolUDP },
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "UDP NodePort of Service default/web", wantCode: codeFailedChecks},
		{name: "TCP check, Ready node without Pods", policy: cluster, check: tcpCheck,
			target: cloud.Target{ID: instA, Port: 30080}, want: cloud.TargetHealthy},
		{name: "no check configured: TCP on the target", policy: cluster,
			target: cloud.Target{ID: instC, Port: 30080}, want: cloud.TargetHealthy},
		{name: "TCP check, NotReady node", policy: cluster, check: tcpCheck,
			mutate: func(w *world) { w.objs.nodeList[0] = testNode(nodeA, ipA, instA, "10.244.0.0/24", false) },
			target: cloud.Target{ID: instA, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "is not Ready", wantCode: codeTimeout},
		{name: "instance without a Node", policy: cluster, check: tcpCheck,
			mutate: func(w *world) { w.objs.nodeList = w.objs.nodeList[1:] },
			target: cloud.Target{ID: instA, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "has no Node"},
		{name: "stopped instance: the cloud's call", policy: cluster, check: tcpCheck,
			mutate: func(w *world) { w.state.Instances[0].State = cloud.InstanceStopped },
			target: cloud.Target{ID: instA, Port: 30080}, notJudged: true},
		{name: "unused target: the cloud's call", policy: cluster, check: tcpCheck,
			target: cloud.Target{ID: instA, Port: 30080, Health: cloud.TargetUnused}, notJudged: true},
		{name: "ip target with a ready endpoint", policy: cluster, lbType: cloud.TargetTypeIP,
			target: cloud.Target{ID: podBIP, Port: 8080}, want: cloud.TargetHealthy},
		{name: "ip target whose endpoint is not ready", policy: cluster, lbType: cloud.TargetTypeIP,
			mutate: func(w *world) {
				w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "notready"})}
			},
			target: cloud.Target{ID: podBIP, Port: 8080}, want: cloud.TargetUnhealthy, reasonHas: "no ready endpoint has IP"},
		// No server in the lab speaks TLS: a check that opens TLS fails on
		// whatever answers, as AWS's does against a plain server.
		{name: "HTTPS healthCheckNodePort: kube-proxy answers plain HTTP", policy: local, check: &cloud.HealthCheck{Protocol: "HTTPS", Port: 32000, Path: "/healthz"},
			target: cloud.Target{ID: instB, Port: 30080}, want: cloud.TargetUnhealthy, reasonHas: "TLS handshake with kube-proxy's health check server", wantCode: codeFailedChecks},
		{name: "Classic ELB SSL check: a TCP connect", policy: cluster, check: &cloud.HealthCheck{Protocol: "SSL", Port: 30080},
			target: cloud.Target{ID: instA, Port: 30080}, want: cloud.TargetHealthy},
		{name: "ip target the VPC cannot reach", policy: cluster, lbType: cloud.TargetTypeIP,
			mutate: func(w *world) { w.state.Routes = nil },
			target: cloud.Target{ID: podBIP, Port: 8080}, want: cloud.TargetUnhealthy, reasonHas: "cannot reach", wantCode: codeTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(tc.policy)
			w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			if tc.mutate != nil {
				tc.mutate(w)
			}
			lb := cloud.LoadBalancer{Name: "aweb", TargetType: cloud.TargetTypeInstance, HealthCheck: tc.check,
				Listeners: []cloud.Listener{{Protocol: "TCP", Port: 80, TargetPort: 30080}}}
			if tc.lbType != "" {
				lb.TargetType = tc.lbType
			}
			e := w.dataplane(t).env()
			svc := w.objs.services[0]
			r, ok := e.targetHealth(&lb, svc, tc.target)
			if tc.notJudged {
				if ok {
					t.Errorf("judged %+v, want it left to the cloud", r)
				}
				return
			}
			h := cloud.TargetUnhealthy
			if r.ok {
				h = cloud.TargetHealthy
			}
			if !ok || h != tc.want || r.http != nil {
				t.Errorf("health = %s (%+v, judged %v), want %s", h, r, ok, tc.want)
			}
			if tc.wantReason != "" && r.why != tc.wantReason {
				t.Errorf("reason = %q, want %q", r.why, tc.wantReason)
			}
			if !strings.Contains(r.why, tc.reasonHas) {
				t.Errorf("reason = %q, want it to contain %q", r.why, tc.reasonHas)
			}
			if tc.wantCode != "" && r.code != tc.wantCode {
				t.Errorf("code = %q, want %q", r.code, tc.wantCode)
			}
			if h == cloud.TargetHealthy && (r.why != "" || r.code != "") {
				t.Errorf("healthy with reason %q, code %q", r.why, r.code)
			}
		})
	}
}

func TestHealthCheckNodePortAnswer(t *testing.T) {
	w := baseWorld(local)
	w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
	d := w.dataplane(t)
	for _, tc := range []struct {
		node   string
		status int
		json   string
	}{
		{nodeB, 200, `{"service":{"namespace":"default","name":"web"},"localEndpoints":1,"serviceProxyHealthy":true}`},
		{nodeA, 503, `{"service":{"namespace":"default","name":"web"},"localEndpoints":0,"serviceProxyHealthy":true}`},
	} {
		a, err := d.HealthCheckNodePort(tc.node, 32000)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(a)
		if a.Status != tc.status || string(b) != tc.json {
			t.Errorf("%s: %d %s, want %d %s", tc.node, a.Status, b, tc.status, tc.json)
		}
	}
	if _, err := d.HealthCheckNodePort(nodeA, 30080); !IsReason(err, ReasonNoNodePort) {
		t.Errorf("NodePort as healthCheckNodePort: %v", err)
	}
}

// An NLB's HTTP check holds the answer to its target group's matcher
// (Matcher.HttpCode, default 200-399); a Classic ELB's takes only 200.
func TestStatusMatches(t *testing.T) {
	for _, tc := range []struct {
		status  int
		nlb     bool
		matcher string
		want    bool
	}{
		{200, false, "", true},
		{302, false, "", false},
		{302, true, "", true},
		{404, true, "", false},
		{404, true, "200-299,404", true},
		{202, true, "200,202", true},
		{201, true, "200,202", false},
		{500, true, "200-599", true},
		{200, true, "nonsense", false},
	} {
		if got := statusMatches(tc.status, tc.nlb, tc.matcher); got != tc.want {
			t.Errorf("statusMatches(%d, nlb %v, %q) = %v, want %v", tc.status, tc.nlb, tc.matcher, got, tc.want)
		}
	}
}
