package dataplane

import (
	"cmp"
	"fmt"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Health checks run as AWS runs them (docs/aws.md, "Health checks"): each
// target is checked every interval of its load balancer's health check,
// and its state changes only after the threshold count of consecutive
// results: unhealthy after UnhealthyThreshold failures, healthy after
// HealthyThreshold passes. A new target starts "initial"; a Classic ELB
// (and the lab's own load balancers, shaped after it) puts it in service
// after HealthyThreshold passes, an NLB after one ("Your target is not in
// service until it passes one health check", the NLB troubleshooting
// guide). Time is scaled: Config.HealthCheckTimeScale divides every
// interval and timeout, so that a class does not wait AWS's 30 s × 3.
//
// What a check finds (health.go, targetHealth) is computed from the
// objects kube-proxy answers from, except an HTTP check that reaches a
// Pod: that one is a real request to the Pod's processes (probeHTTP),
// whose status is held to the load balancer's matcher.

// The defaults of the lab's own load balancers, whose health check may
// leave them zero: the in-tree AWS provider's Classic ELB defaults, which
// cloud-provider-aws keeps (defaultElbHC* in pkg/providers/v1/
// aws_loadbalancer.go of v1.37.1).
const (
	defaultHCInterval  = 10
	defaultHCTimeout   = 5
	defaultHCHealthy   = 2
	defaultHCUnhealthy = 6
	// maxHTTPProbes bounds the HTTP checks in flight at once; one that
	// does not fit waits for the next round.
	maxHTTPProbes = 32
)

// tgtKey is a target of one load balancer: an instance or an IP, and its
// port.
type tgtKey struct {
	id   string
	port int32
}

// lbChecks is one load balancer's targets' histories. They are kept per
// load balancer, not in one map of every target: a round then hashes a
// target's short key, and a load balancer whose targets were all seen is
// swept without walking them (a round of 1,000 load balancers x 1,000
// nodes walked a million entries twice).
type lbChecks struct {
	targets map[tgtKey]*hcState
	round   uint64 // the last round that saw the load balancer
	seen    int    // how many of targets that round saw
}

// hcState is one target's health-check history.
type hcState struct {
	health     cloud.TargetHealth
	code, why  string
	oks, fails int // consecutive results
	next       time.Time
	inflight   bool // an HTTP check has not come back
	seen       uint64
}

// hcParams are a load balancer's check settings, scaled.
type hcParams struct {
	interval, timeout  time.Duration
	healthy, unhealthy int
	nlb                bool
}

type healthChecker struct {
	mu    sync.Mutex
	lbs   map[string]*lbChecks // by load balancer name
	round uint64
	sem   chan struct{}
}

func newHealthChecker() *healthChecker {
	return &healthChecker{lbs: map[string]*lbChecks{}, sem: make(chan struct{}, maxHTTPProbes)}
}

// state is the history of one target of a load balancer, nil if none.
func (h *healthChecker) state(lb string, k tgtKey) *hcState {
	if c := h.lbs[lb]; c != nil {
		return c.targets[k]
	}
	return nil
}

// sweep forgets the targets of c that round did not see: deregistered, or
// all of them when the load balancer is gone. A check in flight keeps its
// target: its result still lands in the state.
func (c *lbChecks) sweep(round uint64) {
	if c.round == round && c.seen == len(c.targets) {
		return
	}
	for k, st := range c.targets {
		if st.seen != round && !st.inflight {
			delete(c.targets, k)
		}
	}
}

func (d *Dataplane) params(lb *cloud.LoadBalancer) hcParams {
	scale := time.Duration(cmp.Or(d.cfg.HealthCheckTimeScale, defaultHealthCheckTimeScale))
	var hc cloud.HealthCheck
	if lb.HealthCheck != nil {
		hc = *lb.HealthCheck
	}
	sec := func(n, def int32) time.Duration { return time.Duration(cmp.Or(n, def)) * time.Second / scale }
	return hcParams{
		interval:  sec(hc.IntervalSeconds, defaultHCInterval),
		timeout:   sec(hc.TimeoutSeconds, defaultHCTimeout),
		healthy:   int(cmp.Or(hc.HealthyThreshold, defaultHCHealthy)),
		unhealthy: int(cmp.Or(hc.UnhealthyThreshold, defaultHCUnhealthy)),
		nlb:       lb.Kind == cloud.LBKindNetwork,
	}
}

// record counts one check's result and moves the state when a threshold
// is reached.
func (st *hcState) record(r checkResult, p hcParams) {
	if r.ok {
		st.oks, st.fails = st.oks+1, 0
	} else {
		st.oks, st.fails = 0, st.fails+1
	}
	switch st.health {
	case cloud.TargetHealthy:
		if st.fails >= p.unhealthy {
			st.health, st.code, st.why = cloud.TargetUnhealthy, r.code, r.why
		}
	case cloud.TargetUnhealthy:
		if st.oks >= p.healthy {
			st.health, st.code, st.why = cloud.TargetHealthy, "", ""
		} else if !r.ok {
			st.code, st.why = r.code, r.why
		}
	default: // initial
		need := p.healthy
		if p.nlb {
			need = 1
		}
		switch {
		case st.oks >= need:
			st.health, st.code, st.why = cloud.TargetHealthy, "", ""
		case st.fails >= p.unhealthy:
			st.health, st.code, st.why = cloud.TargetUnhealthy, r.code, r.why
		case r.ok:
			st.code, st.why = codeInitialChecks, fmt.Sprintf("initial health checks: %d of %d passed in a row", st.oks, need)
		default:
			st.code, st.why = codeInitialChecks, fmt.Sprintf("initial health checks: %d of %d failed in a row (%s)", st.fails, p.unhealthy, r.why)
		}
	}
}

// healthChange is one target whose recorded health is to change.
type healthChange struct {
	LB     string
	Target string
	Port   int32
	Health cloud.TargetHealth
	Reason string
	Code   string
}

// healthRound checks every target that is due at now (HTTP checks are
// started and count when they come back) and lists the targets whose
// health differs from what the cloud records, so the cloud is only told
// about changes.
func (d *Dataplane) healthRound(cv *cloudView, now time.Time) []healthChange {
	h := d.health()
	e := d.envFor(cv)
	e.memo = newRoundMemo()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.round++
	var out []healthChange
	for _, lb := range cv.lbs {
		var svc *v1.Service
		svcLooked := false
		p := d.params(lb)
		c := h.lbs[lb.Name]
		if c == nil {
			c = &lbChecks{targets: make(map[tgtKey]*hcState, len(lb.Targets))}
			h.lbs[lb.Name] = c
		}
		c.round, c.seen = h.round, 0
		for _, t := range lb.Targets {
			k := tgtKey{t.ID, t.Port}
			st := c.targets[k]
			if t.Health == cloud.TargetUnused {
				if st != nil && st.seen == h.round {
					c.seen-- // listed twice
				}
				delete(c.targets, k)
				continue
			}
			if st == nil {
				st = &hcState{health: cloud.TargetInitial, code: "Elb.RegistrationInProgress", why: "registered; not checked yet", next: now}
				if t.Health == cloud.TargetHealthy || t.Health == cloud.TargetUnhealthy {
					// Checked before (by an earlier data plane): keep it.
					st.health, st.code, st.why = t.Health, t.Code, t.Reason
				}
				c.targets[k] = st
			}
			if st.seen != h.round {
				st.seen = h.round
				c.seen++
			}
			if !st.inflight && !now.Before(st.next) {
				if !svcLooked {
					svc, svcLooked = e.serviceForLB(lb), true
				}
				r, judged := e.targetHealth(lb, svc, t)
				if !judged {
					delete(c.targets, k)
					c.seen--
					continue
				}
				st.next = now.Add(p.interval)
				if r.http != nil {
					d.startProbe(cv, st, r.http, p)
				} else {
					st.record(r, p)
				}
			}
			if st.health != t.Health || st.why != t.Reason || st.code != t.Code {
				out = append(out, healthChange{LB: lb.Name, Target: t.ID, Port: t.Port, Health: st.health, Reason: st.why, Code: st.code})
			}
		}
	}
	for name, c := range h.lbs {
		c.sweep(h.round)
		if len(c.targets) == 0 && c.round != h.round {
			delete(h.lbs, name) // gone, and no check of it in flight
		}
	}
	return out
}

// startProbe sends an HTTP check on its own goroutine; the result counts
// when it comes back, or as a timeout after the check's timeout. At most
// maxHTTPProbes run at once; past that the check waits a round.
func (d *Dataplane) startProbe(cv *cloudView, st *hcState, p *httpProbe, params hcParams) {
	h := d.health()
	select {
	case h.sem <- struct{}{}:
	default:
		st.next = time.Time{}
		return
	}
	st.inflight = true
	go func() {
		defer func() { <-h.sem }()
		r := d.probeHTTP(cv, p, params.timeout)
		h.mu.Lock()
		st.inflight = false
		st.record(r, params)
		h.mu.Unlock()
	}()
}

// probeHTTP sends GET path to the Pod the check reaches, from the load
// balancer's address, and holds the answer's status to the matcher: a
// Classic ELB takes only 200 ("Any answer other than 200 OK within the
// timeout period is considered unhealthy", ELB's HealthCheck reference),
// an NLB 200-399 (the Matcher reference's default for Network Load
// Balancers). The request reaches the Pod's processes as any other, so
// their access log shows it.
func (d *Dataplane) probeHTTP(cv *cloudView, p *httpProbe, timeout time.Duration) checkResult {
	e := d.envFor(cv)
	tr := Trace{ID: newTraceID(), Time: d.clock.Now(), Kind: KindNodePort, ClientIP: p.src, Origin: OriginLab}
	var got reached
	if p.node != nil {
		got = e.routeNodePort(&tr, p.node, p.port, p.src)
	} else {
		tr.Kind = KindPodIP
		got = e.deliver(&tr, nil, endpoint{IP: p.ip, Port: p.port}, p.src)
	}
	if got.pod == nil {
		if tr.Status == statusDropped {
			return failed(codeTimeout, tr.Error)
		}
		return failed(codeFailedChecks, tr.Error)
	}
	if p.tls {
		return failed(codeFailedChecks, noTLS(fmt.Sprintf("Pod %s port %d", tr.Pod, got.port)))
	}
	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		hdr := http.Header{}
		hdr.Set("User-Agent", healthCheckUA)
		a, err := d.answer(got.pod, got.port, &tr, http.MethodGet, p.path, hdr, nil, nil)
		done <- result{a, err}
	}()
	timer := d.clock.NewTimer(timeout)
	defer timer.Stop()
	var res result
	select {
	case res = <-done:
	case <-timer.C():
		return failed(codeTimeout, fmt.Sprintf("GET %s on %s:%d: no answer within the check's timeout (%s)", p.path, tr.Pod, got.port, timeout))
	}
	if res.err != nil {
		return failed(codeFailedChecks, tr.Error)
	}
	if statusMatches(res.a.status, p.nlb, p.matcher) {
		return checkResult{ok: true}
	}
	want := "200"
	if p.nlb {
		want = cmp.Or(p.matcher, cloud.DefaultNLBMatcher)
	}
	return failed(codeCodeMismatch, fmt.Sprintf("GET %s on Pod %s answered %d; the health check wants %s", p.path, tr.Pod, res.a.status, want))
}

// statusMatches holds status to the check's matcher: a Classic ELB's 200,
// or an NLB target group's Matcher.HttpCode (cloud.ParseMatcher; the
// model refuses a matcher it cannot parse, so a bad one here matches
// nothing).
func statusMatches(status int, nlb bool, matcher string) bool {
	if !nlb {
		return status == http.StatusOK
	}
	ranges, err := cloud.ParseMatcher(cmp.Or(matcher, cloud.DefaultNLBMatcher))
	if err != nil {
		return false
	}
	for _, r := range ranges {
		if status >= r[0] && status <= r[1] {
			return true
		}
	}
	return false
}

// checkHealth runs one round of health checks against the cloud view cv
// and tells the cloud what changed.
func (d *Dataplane) checkHealth(cv *cloudView) {
	changes := d.healthRound(cv, d.clock.Now())
	// One call per load balancer: the round goes load balancer by load
	// balancer.
	for len(changes) > 0 {
		lb := changes[0].LB
		n := 1
		for n < len(changes) && changes[n].LB == lb {
			n++
		}
		updates := make([]cloud.TargetHealthUpdate, n)
		for i, c := range changes[:n] {
			updates[i] = cloud.TargetHealthUpdate{ID: c.Target, Port: c.Port, Health: c.Health, Reason: c.Reason, Code: c.Code}
		}
		if err := d.cfg.Cloud.SetTargetsHealth(lb, updates); err != nil {
			// A target or the load balancer went away since the snapshot;
			// the next round works from a fresh one.
			d.log.Debug("setting target health", "lb", lb, "targets", n, "err", err)
		} else {
			d.log.Debug("target health changed", "lb", lb, "targets", n)
		}
		changes = changes[n:]
	}
}

// health is the data plane's health-check history, made on first use
// (tests build Dataplanes without New).
func (d *Dataplane) health() *healthChecker {
	d.hcOnce.Do(func() { d.hc = newHealthChecker() })
	return d.hc
}
