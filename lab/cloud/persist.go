package cloud

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	stateVersion = 1
	// Mutations arrive in bursts (a Service controller sync is a handful of
	// calls); one write per burst is enough.
	minFlushInterval = 200 * time.Millisecond
	// With 1,000 load balancers x 1,000 targets a write takes a while; wait
	// at least this many times the last write's duration between writes so
	// persistence stays a small fraction of the lab's CPU.
	flushBackoffFactor = 4
)

// stateFile is the on-disk form. Faults and step mode are deliberately not
// in it: a restarted lab should start healthy.
type stateFile struct {
	Version int       `json:"version"`
	SavedAt time.Time `json:"savedAt"`
	// LastCallSeq lets call sequence numbers keep growing across restarts, so
	// a page that remembers a Seq never mistakes new calls for old ones.
	LastCallSeq   uint64     `json:"lastCallSeq"`
	NextZone      int        `json:"nextZone"`
	Instances     []Instance `json:"instances"` // launch order
	LoadBalancers []savedLB  `json:"loadBalancers"`
	Routes        []Route    `json:"routes"`
	// AWS is the AWS model (aws_persist.go); absent in files written
	// before it existed.
	AWS *savedAWS `json:"aws,omitempty"`
}

// savedLB stores targets as bare ID and port: health is not persisted (see
// SetTargetHealth), and at 1,000 nodes x 1,000 load balancers leaving it out
// halves the file and the copy taken under the state lock.
type savedLB struct {
	LoadBalancer
	Targets []savedTarget `json:"targets"` // shadows LoadBalancer.Targets
}

type savedTarget struct {
	ID   string `json:"id"`
	Port int32  `json:"port"`
}

// store writes state in the background: mutations only mark it dirty, so
// API calls never wait for the disk.
type store struct {
	path   string
	dirty  chan struct{} // capacity 1: any number of marks coalesce
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool

	mu      sync.Mutex // one writer at a time
	lastDur time.Duration
}

func newStore(path string) *store {
	return &store{
		path:  path,
		dirty: make(chan struct{}, 1),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

func (c *Cloud) markDirty() {
	if c.store == nil {
		return
	}
	select {
	case c.store.dirty <- struct{}{}:
	default:
	}
}

// stop ends the background writer; it reports false if it was already
// stopped.
func (s *store) stop() bool {
	if !s.closed.CompareAndSwap(false, true) {
		return false
	}
	close(s.quit)
	<-s.done
	return true
}

// flushLoop uses wall-clock timers, not Config.Clock: a fake clock in a test
// must not be able to stall persistence.
func (c *Cloud) flushLoop() {
	s := c.store
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-s.dirty:
		case <-s.quit:
			return
		}
		s.mu.Lock()
		gap := max(minFlushInterval, flushBackoffFactor*s.lastDur)
		s.mu.Unlock()
		if wait := gap - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return // Close writes the final state
			}
		}
		last = time.Now()
		// A failed write is retried on the next mutation and reported by
		// Flush or Close.
		_ = c.Flush()
	}
}

// Flush writes the state file now. It is a no-op without a StatePath.
func (c *Cloud) Flush() error {
	s := c.store
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	// Copy under the read lock, encode and write outside it.
	c.mu.RLock()
	f := stateFile{
		Version:       stateVersion,
		SavedAt:       c.now(),
		NextZone:      c.nextZone,
		Instances:     c.instancesLocked(),
		LoadBalancers: c.savedLBsLocked(),
		Routes:        c.routesLocked(),
		AWS:           c.savedAWSLocked(),
	}
	c.mu.RUnlock()
	f.LastCallSeq = c.log.lastSeq()
	err := writeFileAtomic(s.path, func(w io.Writer) error { return json.NewEncoder(w).Encode(f) })
	s.lastDur = time.Since(start)
	if err != nil {
		return fmt.Errorf("cloud: save state: %w", err)
	}
	return nil
}

func (c *Cloud) savedLBsLocked() []savedLB {
	names := slices.Sorted(maps.Keys(c.lbs))
	out := make([]savedLB, len(names))
	for i, n := range names {
		lb := c.lbs[n]
		shallow := *lb
		shallow.Targets = nil
		out[i].LoadBalancer = shallow.clone()
		out[i].Targets = make([]savedTarget, len(lb.Targets))
		for j, t := range lb.Targets {
			out[i].Targets[j] = savedTarget{ID: t.ID, Port: t.Port}
		}
	}
	return out
}

// writeFileAtomic replaces path so that a crash leaves either the old or the
// new file, never half of one. It streams through a buffer rather than
// building the whole document in memory first.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename itself durable where supported
		d.Close()
	}
	return nil
}

// load restores state from path, if it exists, and returns the last call
// Seq it recorded.
func (c *Cloud) load(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cloud: read state file: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, fmt.Errorf("cloud: state file %s is corrupt (%v); move it away to start with an empty cloud", path, err)
	}
	if f.Version != stateVersion {
		return 0, fmt.Errorf("cloud: state file %s has version %d, this ccmlab reads version %d", path, f.Version, stateVersion)
	}
	if err := c.restore(&f); err != nil {
		return 0, fmt.Errorf("cloud: state file %s does not fit this cloud's config (%w); was it written with another VPC, zones or LB CIDR?", path, err)
	}
	return f.LastCallSeq, nil
}

// restore checks the file against the config as it rebuilds state, since a
// hand-edited file or a changed config would otherwise surface later as
// duplicate IPs or unknown zones.
func (c *Cloud) restore(f *stateFile) error {
	for _, inst := range f.Instances {
		if !isInstanceID(inst.ID) {
			return fmt.Errorf("instance ID %q is malformed", inst.ID)
		}
		if _, dup := c.instances[inst.ID]; dup {
			return fmt.Errorf("instance %s is listed twice", inst.ID)
		}
		sn, ok := c.net.subnets[inst.Zone]
		if !ok {
			return fmt.Errorf("instance %s is in zone %q, not one of %s", inst.ID, inst.Zone, strings.Join(c.cfg.Zones, ", "))
		}
		switch inst.State {
		case InstancePending, InstanceRunning, InstanceStopping, InstanceStopped, InstanceTerminated:
		default:
			return fmt.Errorf("instance %s has unknown state %q", inst.ID, inst.State)
		}
		a, err := netip.ParseAddr(inst.PrivateIP)
		if err != nil {
			return fmt.Errorf("instance %s has a malformed private IP %q", inst.ID, inst.PrivateIP)
		}
		if err := sn.Reserve(a); err != nil {
			return fmt.Errorf("instance %s private IP: %v", inst.ID, err)
		}
		if _, dup := c.byDNS[inst.PrivateDNSName]; dup || inst.PrivateDNSName == "" {
			return fmt.Errorf("instance %s has a missing or duplicate private DNS name %q", inst.ID, inst.PrivateDNSName)
		}
		c.instSeq++
		c.instances[inst.ID] = &instanceRec{Instance: inst.clone(), seq: c.instSeq}
		c.byDNS[inst.PrivateDNSName] = inst.ID
	}
	if f.NextZone >= 0 {
		c.nextZone = f.NextZone % len(c.cfg.Zones)
	}
	for _, saved := range f.LoadBalancers {
		lb := saved.LoadBalancer
		if err := validateLBName(lb.Name); err != nil {
			return fmt.Errorf("load balancer %q: %s", lb.Name, message(err))
		}
		if _, dup := c.lbs[lb.Name]; dup {
			return fmt.Errorf("load balancer %s is listed twice", lb.Name)
		}
		if lb.TargetType != TargetTypeInstance && lb.TargetType != TargetTypeIP {
			return fmt.Errorf("load balancer %s has unknown target type %q", lb.Name, lb.TargetType)
		}
		if lb.IP != "" {
			a, err := netip.ParseAddr(lb.IP)
			if err != nil {
				return fmt.Errorf("load balancer %s has a malformed IP %q", lb.Name, lb.IP)
			}
			if err := c.net.lb.Reserve(a); err != nil {
				return fmt.Errorf("load balancer %s IP: %v", lb.Name, err)
			}
		}
		lb.Targets = make([]Target, len(saved.Targets))
		for i, t := range saved.Targets {
			h, reason := c.restoredHealth(&lb, t.ID)
			lb.Targets[i] = Target{ID: t.ID, Port: t.Port, Health: h, Reason: reason}
		}
		slices.SortFunc(lb.Targets, compareTargets)
		c.lbs[lb.Name] = &lb
	}
	for _, r := range f.Routes {
		p, err := parseRouteCIDR(r.DestinationCIDR)
		if err != nil {
			return fmt.Errorf("route %q: %s", r.DestinationCIDR, message(err))
		}
		if _, dup := c.routes[p]; dup {
			return fmt.Errorf("route %s is listed twice", p)
		}
		c.routes[p] = &Route{DestinationCIDR: p.String(), InstanceID: r.InstanceID, CreatedAt: r.CreatedAt}
	}
	return c.restoreAWS(f.AWS)
}

// restoredHealth forgets the last observed health: nobody has checked the
// target since the restart, so claiming "healthy" would be a lie.
func (c *Cloud) restoredHealth(lb *LoadBalancer, id string) (TargetHealth, string) {
	if lb.TargetType == TargetTypeInstance {
		if rec, ok := c.instances[id]; !ok || rec.State != InstanceRunning {
			return TargetUnused, reasonInvalidState
		}
	}
	return TargetInitial, reasonRegistering
}
