package dataplane

import (
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

// targetHealth is what a health check of target t of lb (made for svc,
// which may be nil) finds. ok is false when the health is not the data
// plane's to judge: the cloud itself marks targets on stopped instances
// "unused", as ELB does.
func (e *env) targetHealth(lb *cloud.LoadBalancer, svc *v1.Service, t cloud.Target) (h cloud.TargetHealth, reason string, ok bool) {
	if t.Health == cloud.TargetUnused {
		return "", "", false
	}
	if lb.TargetType == cloud.TargetTypeIP {
		pod := e.cluster.podByIP(t.ID)
		var podNode *v1.Node
		if pod != nil {
			podNode = e.cluster.node(pod.Spec.NodeName)
		}
		if _, fail, reachable := e.reach(nil, t.ID, podNode); !reachable {
			return cloud.TargetUnhealthy, tracetext.English(fail), true
		}
		if e.readyEndpointIP(svc, t.ID) {
			return cloud.TargetHealthy, "", true
		}
		return cloud.TargetUnhealthy, fmt.Sprintf("no ready endpoint has IP %s", t.ID), true
	}

	inst := e.cloud.instByID[t.ID]
	if inst == nil || inst.State != cloud.InstanceRunning {
		return "", "", false
	}
	node := e.nodeForInstance(inst)
	if node == nil {
		return cloud.TargetUnhealthy, fmt.Sprintf("instance %s has no Node", t.ID), true
	}
	if isAWS(lb) {
		if reason, ok := e.awsTargetHealth(lb, t, inst); !ok {
			return cloud.TargetUnhealthy, reason, true
		}
	}
	if hc := lb.HealthCheck; hc != nil && strings.HasPrefix(strings.ToUpper(hc.Protocol), "HTTP") {
		if a, found := e.healthCheckNodePort(node, hc.Port); found {
			if a.LocalEndpoints > 0 {
				return cloud.TargetHealthy, "", true
			}
			return cloud.TargetUnhealthy, reasonNoLocalEndpoints, true
		}
		if s, _ := e.cluster.serviceByNodePort(hc.Port, v1.ProtocolTCP); s == nil {
			return cloud.TargetUnhealthy, fmt.Sprintf("nothing answers on port %d of node %s", hc.Port, node.Name), true
		}
		// An HTTP check on a traffic NodePort: any node forwards it, as
		// with a TCP check.
	}
	// kube-proxy answers on a NodePort on every node, so a TCP check only
	// fails when the node itself is down.
	if !e.nodeReady(node) {
		return cloud.TargetUnhealthy, fmt.Sprintf("node %s is not Ready", node.Name), true
	}
	return cloud.TargetHealthy, "", true
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

// healthChange is one target whose recorded health is to change.
type healthChange struct {
	LB     string
	AWS    bool // an AWS model load balancer: SetAWSTargetsHealth
	Target string
	Port   int32
	Health cloud.TargetHealth
	Reason string
}

// healthChanges lists the targets whose computed health differs from what
// the cloud records, so the cloud is only told about changes.
func (e *env) healthChanges() []healthChange {
	e.memo = newRoundMemo()
	defer func() { e.memo = nil }()
	var out []healthChange
	for _, lb := range e.cloud.lbs {
		svc := e.serviceForLB(lb)
		for _, t := range lb.Targets {
			h, reason, ok := e.targetHealth(lb, svc, t)
			if ok && (h != t.Health || reason != t.Reason) {
				out = append(out, healthChange{LB: lb.Name, AWS: isAWS(lb), Target: t.ID, Port: t.Port, Health: h, Reason: reason})
			}
		}
	}
	return out
}

// checkHealth runs one round of health checks against the cloud view cv.
func (d *Dataplane) checkHealth(cv *cloudView) {
	e := d.envFor(cv)
	changes := e.healthChanges()
	// One call per load balancer: healthChanges sorts by load balancer.
	for len(changes) > 0 {
		lb := changes[0].LB
		n := 1
		for n < len(changes) && changes[n].LB == lb {
			n++
		}
		updates := make([]cloud.TargetHealthUpdate, n)
		for i, c := range changes[:n] {
			updates[i] = cloud.TargetHealthUpdate{ID: c.Target, Port: c.Port, Health: c.Health, Reason: c.Reason}
		}
		set := d.cfg.Cloud.SetTargetsHealth
		if changes[0].AWS {
			set = d.cfg.Cloud.SetAWSTargetsHealth
		}
		if err := set(lb, updates); err != nil {
			// A target or the load balancer went away since the snapshot;
			// the next round works from a fresh one.
			d.log.Debug("setting target health", "lb", lb, "targets", n, "err", err)
		} else {
			d.log.Debug("target health changed", "lb", lb, "targets", n)
		}
		changes = changes[n:]
	}
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
