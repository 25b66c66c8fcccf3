package dataplane

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Session affinity as kube-proxy keeps it: a Service with
// sessionAffinity: ClientIP sends every connection of one client address
// to the endpoint its first connection went to, for
// sessionAffinityConfig.clientIP.timeoutSeconds after the last one
// (default 10800, pkg/apis/core/v1/defaults.go); the iptables proxier
// does it with one "recent" list per endpoint chain of the Service port
// (pkg/proxy/iptables/proxier.go, "-m recent --rcheck --seconds"). An
// endpoint that is no longer a candidate breaks the affinity.

// maxAffinities bounds the table: one entry per client and Service port,
// which a student's loop can multiply; the oldest go first.
const maxAffinities = 4096

type affinityKey struct{ service, port, client string }

type affinityEntry struct {
	endpoint string // ip:port
	expires  time.Time
}

type affinityTable struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	entries map[affinityKey]affinityEntry
}

func newAffinityTable(c clock.PassiveClock) *affinityTable {
	return &affinityTable{clock: c, entries: map[affinityKey]affinityEntry{}}
}

// affinityTimeout is the Service's ClientIP affinity timeout, or 0 when it
// has none.
func affinityTimeout(svc *v1.Service) time.Duration {
	if svc.Spec.SessionAffinity != v1.ServiceAffinityClientIP {
		return 0
	}
	secs := int32(v1.DefaultClientIPServiceAffinitySeconds)
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		secs = *c.ClientIP.TimeoutSeconds
	}
	return time.Duration(secs) * time.Second
}

// choose is the index of the candidate a connection from client goes to:
// the one it went to before while the affinity holds, else pick's.
func (a *affinityTable) choose(svc *v1.Service, sp *v1.ServicePort, client string, cands []endpoint, pick func() int) int {
	timeout := affinityTimeout(svc)
	if a == nil || timeout == 0 || client == "" {
		return pick()
	}
	key := affinityKey{svc.Namespace + "/" + svc.Name, sp.Name, client}
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.entries[key]; ok && now.Before(e.expires) {
		for i, c := range cands {
			if c.addr() == e.endpoint {
				a.entries[key] = affinityEntry{endpoint: e.endpoint, expires: now.Add(timeout)}
				return i
			}
		}
	}
	i := pick()
	if len(a.entries) >= maxAffinities {
		a.evict(now)
	}
	a.entries[key] = affinityEntry{endpoint: cands[i].addr(), expires: now.Add(timeout)}
	return i
}

// evict drops the expired entries, or if none has expired the one that
// expires first.
func (a *affinityTable) evict(now time.Time) {
	var oldest affinityKey
	var first time.Time
	for k, e := range a.entries {
		if !now.Before(e.expires) {
			delete(a.entries, k)
			continue
		}
		if first.IsZero() || e.expires.Before(first) {
			oldest, first = k, e.expires
		}
	}
	if len(a.entries) >= maxAffinities {
		delete(a.entries, oldest)
	}
}
