package dataplane

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// pickTarget is the load balancer's choice for one connection on listener
// l: round-robin over the healthy targets; before the first health check
// has finished, over those still "initial" (so a new load balancer works
// at once); otherwise none, except that an NLB fails open to all of them.
// Targets registered on the listener's target port serve it; if none are
// (ip mode may register each Pod on its own port), all targets do.
func pickTarget(lb *cloud.LoadBalancer, l cloud.Listener, pick func(string, int) int) (t cloud.Target, picked, fail i18n.Msg, ok bool) {
	var pool []cloud.Target
	for _, t := range lb.Targets {
		if t.Port == l.TargetPort {
			pool = append(pool, t)
		}
	}
	if len(pool) == 0 {
		pool = lb.Targets
	}
	if len(pool) == 0 {
		fail = why(tracetext.NoTargets, "lb", lb.Name)
		return cloud.Target{}, fail, fail, false
	}
	rr := fmt.Sprintf("lb/%s/%s/%d", lb.Name, l.Protocol, l.Port)
	state := cloud.TargetHealthy
	cands := filterTargets(pool, cloud.TargetHealthy)
	if len(cands) == 0 {
		state = cloud.TargetInitial
		cands = filterTargets(pool, cloud.TargetInitial)
	}
	if len(cands) == 0 && lb.Kind == cloud.LBKindNetwork {
		// An NLB whose every target failed its health checks fails open:
		// it sends to all of them, whatever their health (AWS's "Health
		// checks for Network Load Balancer target groups").
		// Not to "unused" ones: those are not in service at all.
		if all := filterTargets(pool, cloud.TargetUnhealthy); len(all) > 0 {
			t = all[pick(rr, len(all))]
			picked = why(tracetext.HopPickedFailOpen, "port", itoa(l.Port), "proto", cmp.Or(l.Protocol, "TCP"), "target", t.ID, "tport", itoa(t.Port),
				"health", string(t.Health), "n", strconv.Itoa(len(all)))
			return t, picked, i18n.Msg{}, true
		}
	}
	if len(cands) == 0 {
		parts := make([]string, len(pool))
		for i, t := range pool {
			parts[i] = fmt.Sprintf("%s:%d %s", t.ID, t.Port, t.Health)
			if t.Reason != "" {
				parts[i] += " (" + t.Reason + ")"
			}
		}
		targets := strings.Join(parts, ", ")
		fail = why(tracetext.NoHealthyTargets, "lb", lb.Name, "targets", targets)
		return cloud.Target{}, fail, fail, false
	}
	t = cands[pick(rr, len(cands))]
	key := tracetext.HopPicked
	if lb.Kind == cloud.LBKindNetwork {
		// An NLB hashes each TCP flow to a target; the lab still takes the
		// targets in turn, and the trace says both.
		key = tracetext.HopPickedNLB
	}
	picked = why(key, "port", itoa(l.Port), "proto", cmp.Or(l.Protocol, "TCP"), "target", t.ID, "tport", itoa(t.Port),
		"health", string(t.Health), "n", strconv.Itoa(len(cands)), "state", string(state))
	return t, picked, i18n.Msg{}, true
}

func filterTargets(ts []cloud.Target, h cloud.TargetHealth) []cloud.Target {
	var out []cloud.Target
	for _, t := range ts {
		if t.Health == h {
			out = append(out, t)
		}
	}
	return out
}

func rrKey(svc *v1.Service, sp *v1.ServicePort, local bool, node string) string {
	k := fmt.Sprintf("svc/%s/%s/%d", svcKey(svc), protoOf(sp.Protocol), sp.Port)
	if local {
		k += "@" + node
	}
	return k
}

// roundRobin keeps one counter per decision point (a listener, a Service
// port on a node). kube-proxy really picks at random; round-robin spreads
// a handful of requests visibly and makes the lab's behaviour repeatable.
type roundRobin struct {
	mu   sync.Mutex
	next map[string]uint64
}

func (r *roundRobin) pick(key string, n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.next[key]
	r.next[key] = i + 1
	return int(i % uint64(n))
}
