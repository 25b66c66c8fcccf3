package dataplane

import (
	"cmp"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// The load balancer's health checks are computed from the same objects
// kube-proxy would answer from, not probed over the network: the answer is
// the same and it never flakes. The result goes to the cloud with
// SetTargetHealth, where the Service controller, the page and the load
// balancer's own target choice (pickTarget) read it.

// reasonNoLocalEndpoints is the reason a node fails the healthCheckNodePort
// check of an externalTrafficPolicy Local Service.
const reasonNoLocalEndpoints = "no local endpoints"

// HealthCheckAnswer is what kube-proxy answers on a Service's
// healthCheckNodePort: JSON with the number of ready endpoints on this
// node, with status 200 when there is at least one and 503 otherwise.
type HealthCheckAnswer struct {
	Status  int `json:"-"`
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// healthCheckNodePort is kube-proxy on node answering on port; ok is false
// when no Service has that healthCheckNodePort (nothing listens there).
func (e *env) healthCheckNodePort(node *v1.Node, port int32) (HealthCheckAnswer, bool) {
	var a HealthCheckAnswer
	svc := e.cluster.serviceByHealthCheckNodePort(port)
	if svc == nil || node == nil {
		return a, false
	}
	a.Service.Namespace, a.Service.Name = svc.Namespace, svc.Name
	a.LocalEndpoints = e.localCounts(svc)[node.Name]
	a.ServiceProxyHealthy = true
	a.Status = 200
	if a.LocalEndpoints == 0 {
		a.Status = 503
	}
	return a, true
}

// AWS's reason codes for an unhealthy target (ELBv2's TargetHealth
// reference); a Classic ELB answers its own sentences for the same states
// (lab/cloud, elbInstanceStateReason).
const (
	codeTimeout       = "Target.Timeout"              // no answer: a packet was dropped
	codeCodeMismatch  = "Target.ResponseCodeMismatch" // an HTTP answer of another status
	codeFailedChecks  = "Target.FailedHealthChecks"   // the connection was refused
	codeInitialChecks = "Elb.InitialHealthChecking"
	healthCheckUA     = "ELB-HealthChecker/2.0"
	defaultHCPath     = "/"
)

// checkResult is one health check of one target: whether it passed, and
// when not, AWS's reason code and the lab's own explanation. http, when
// set, is a request still to be sent to a Pod (Dataplane.probeHTTP): the
// status it answers decides.
type checkResult struct {
	ok   bool
	code string
	why  string
	http *httpProbe
}

// httpProbe is an HTTP health check that reaches a Pod: through kube-proxy
// on node's NodePort, or straight to a Pod IP (ip targets, node nil).
type httpProbe struct {
	node *v1.Node
	ip   string
	port int32
	path string
	src  string // the load balancer's address the check comes from
	nlb  bool   // an NLB's matcher (200-399), else a Classic ELB's 200
	// matcher is an NLB target group's Matcher.HttpCode ("" for the
	// default above).
	matcher string
	// tls: an HTTPS check, which opens TLS before its GET.
	tls bool
}

// noTLS is why an HTTPS check fails on whatever it reaches: no server in the lab speaks TLS, neither
// the Pods' processes nor kube-proxy's health-check server, so the
// handshake fails as it would against a plain TCP or HTTP server on AWS.
func noTLS(what string) string {
	return fmt.Sprintf("the TLS handshake with %s fails: it answers plain TCP, and no server in the lab speaks TLS", what)
}

func failed(code, why string) checkResult { return checkResult{code: code, why: why} }

// targetHealth is what a health check of target t of lb (made for svc,
// which may be nil) finds. ok is false when the health is not the data
// plane's to judge: the cloud itself marks targets on stopped instances
// "unused", as ELB does.
func (e *env) targetHealth(lb *cloud.LoadBalancer, svc *v1.Service, t cloud.Target) (r checkResult, ok bool) {
	if t.Health == cloud.TargetUnused {
		return r, false
	}
	hc := lb.HealthCheck
	isHTTP := hc != nil && strings.HasPrefix(strings.ToUpper(hc.Protocol), "HTTP")
	// An HTTPS check opens TLS first: an NLB's "fail health checks if
	// they support only TLS 1.3" (docs/aws.md, "TLS checks"). A Classic
	// ELB's SSL check stays a TCP connect: no AWS text says it shakes
	// hands.
	isTLS := hc != nil && strings.EqualFold(hc.Protocol, "HTTPS")
	matcher := ""
	if hc != nil {
		matcher = hc.Matcher
	}
	if lb.TargetType == cloud.TargetTypeIP {
		pod := e.cluster.podByIP(t.ID)
		var podNode *v1.Node
		if pod != nil {
			podNode = e.cluster.node(pod.Spec.NodeName)
		}
		if _, fail, reachable := e.reach(nil, t.ID, podNode); !reachable {
			return failed(codeTimeout, tracetext.English(fail)), true
		}
		if isHTTP {
			port := t.Port
			if hc.Port != 0 {
				port = hc.Port
			}
			return checkResult{http: &httpProbe{ip: t.ID, port: port, path: cmp.Or(hc.Path, defaultHCPath),
				src: cmp.Or(lbAddress(lb, nil), defaultClientIP), nlb: lb.Kind == cloud.LBKindNetwork, matcher: matcher, tls: isTLS}}, true
		}
		if e.readyEndpointIP(svc, t.ID) {
			if isTLS {
				return failed(codeFailedChecks, noTLS("Pod "+t.ID)), true
			}
			return checkResult{ok: true}, true
		}
		return failed(codeFailedChecks, fmt.Sprintf("no ready endpoint has IP %s", t.ID)), true
	}

	inst := e.cloud.instByID[t.ID]
	if inst == nil || inst.State != cloud.InstanceRunning {
		return r, false
	}
	node := e.nodeForInstance(inst)
	if node == nil {
		return failed(codeTimeout, fmt.Sprintf("instance %s has no Node", t.ID)), true
	}
	if isAWS(lb) {
		if reason, ok := e.awsTargetHealth(lb, t, inst); !ok {
			return failed(codeTimeout, reason), true
		}
	}
	port := t.Port
	if hc != nil && hc.Port != 0 {
		port = hc.Port
	}
	if a, found := e.healthCheckNodePort(node, port); found {
		// kube-proxy answers on a healthCheckNodePort: a TCP check
		// connects, an HTTP check reads its status (503 without a local
		// endpoint).
		if isTLS {
			return failed(codeFailedChecks, noTLS(fmt.Sprintf("kube-proxy's health check server on node %s port %d", node.Name, port))), true
		}
		if !isHTTP || a.LocalEndpoints > 0 {
			return checkResult{ok: true}, true
		}
		return failed(codeCodeMismatch, reasonNoLocalEndpoints), true
	}
	if e.tcpNodePortService(port) == nil {
		// Nothing listens on TCP there: the node answers a reset. A UDP
		// NodePort is no TCP listener, and NLBs check UDP target groups
		// over TCP or HTTP, never over UDP.
		why := fmt.Sprintf("nothing answers on TCP port %d of node %s", port, node.Name)
		if u, _ := e.cluster.serviceByNodePort(port, v1.ProtocolUDP); u != nil {
			why += fmt.Sprintf(" (it is a UDP NodePort of Service %s; health checks never use UDP)", svcKey(u))
		}
		return failed(codeFailedChecks, why), true
	}
	if !e.nodeReady(node) {
		return failed(codeTimeout, fmt.Sprintf("node %s is not Ready", node.Name)), true
	}
	if isHTTP {
		return checkResult{http: &httpProbe{node: node, port: port, path: cmp.Or(hc.Path, defaultHCPath),
			src: cmp.Or(lbAddress(lb, inst), defaultClientIP), nlb: lb.Kind == cloud.LBKindNetwork, matcher: matcher, tls: isTLS}}, true
	}
	if isTLS {
		return failed(codeFailedChecks, noTLS(fmt.Sprintf("NodePort %d of node %s", port, node.Name))), true
	}
	// kube-proxy answers on a NodePort on every node, so a TCP check only
	// fails when the node itself is down.
	return checkResult{ok: true}, true
}

// readyEndpointIP reports whether ip is a ready endpoint of svc, or, when
// the Service is unknown, a ready Pod.
func (e *env) readyEndpointIP(svc *v1.Service, ip string) bool {
	if svc != nil {
		return e.readyIPs(svc)[ip]
	}
	pod := e.cluster.podByIP(ip)
	if pod == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func (e *env) localCounts(svc *v1.Service) map[string]int {
	if e.memo == nil {
		return localReadyCounts(svc, e.cluster.endpointSlices(svc.Namespace, svc.Name))
	}
	k := svcKey(svc)
	c, ok := e.memo.local[k]
	if !ok {
		c = localReadyCounts(svc, e.cluster.endpointSlices(svc.Namespace, svc.Name))
		e.memo.local[k] = c
	}
	return c
}

func (e *env) readyIPs(svc *v1.Service) map[string]bool {
	if e.memo == nil {
		return readyIPs(svc, e.cluster.endpointSlices(svc.Namespace, svc.Name))
	}
	k := svcKey(svc)
	r, ok := e.memo.ready[k]
	if !ok {
		r = readyIPs(svc, e.cluster.endpointSlices(svc.Namespace, svc.Name))
		e.memo.ready[k] = r
	}
	return r
}

// HealthCheckNodePort is kube-proxy's answer on node's healthCheckNodePort
// port, for showing next to a target's health.
func (d *Dataplane) HealthCheckNodePort(node string, port int32) (HealthCheckAnswer, error) {
	e := d.env()
	n := e.cluster.node(node)
	if n == nil {
		return HealthCheckAnswer{}, requestErrorf(ReasonUnknownNode, "no node named %q", node)
	}
	a, ok := e.healthCheckNodePort(n, port)
	if !ok {
		return HealthCheckAnswer{}, requestErrorf(ReasonNoNodePort, "no Service has healthCheckNodePort %d", port)
	}
	return a, nil
}
