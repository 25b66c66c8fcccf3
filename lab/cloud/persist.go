package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccmlab/ccmlab/internal/datafs"
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

// stateFile is the on-disk form. Step mode is deliberately not in it: a
// restarted lab must not hold its controllers' first calls. Faults are:
// an exercise's or an instructor's deny, limit or latency is still in
// force after a restart.
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
	// Faults in force (SetFaults); absent in files written before they
	// were saved, and when none is.
	Faults *Faults `json:"faults,omitempty"`
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

// saveRetry is how soon a failed write (a full disk, most likely) is tried
// again, so the lab recovers by itself once space is freed, even if nothing
// changes in the meantime.
const saveRetry = time.Second

// store writes state in the background: mutations only mark it dirty, so
// the controllers' API calls never wait for the disk. A student's instance
// calls save synchronously instead (WithSyncSave).
type store struct {
	path   string
	files  datafs.Writer
	dirty  chan struct{} // capacity 1: any number of marks coalesce
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool

	// mu: one writer at a time. Lock order: mu, then Cloud.mu.
	mu      sync.Mutex
	lastDur time.Duration
	// lastErr is the last write's error (nil: it succeeded); an atomic so
	// that health checks never wait behind a long write.
	lastErr atomic.Pointer[error]
}

func newStore(path string, files datafs.Writer) *store {
	return &store{
		path:  path,
		files: files,
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
	retry := false
	for {
		if !retry {
			select {
			case <-s.dirty:
			case <-s.quit:
				return
			}
		}
		s.mu.Lock()
		gap := max(minFlushInterval, flushBackoffFactor*s.lastDur)
		s.mu.Unlock()
		if wait := gap - time.Since(last); wait > 0 && !sleep(wait, s.quit) {
			return // Close writes the final state
		}
		last = time.Now()
		// A failed write is reported by SaveError, Flush and Close, and
		// tried again after saveRetry whether or not anything changes.
		retry = c.Flush() != nil
		if retry && !sleep(saveRetry, s.quit) {
			return
		}
	}
}

// sleep waits d; it reports false when quit closed first.
func sleep(d time.Duration, quit <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-quit:
		return false
	}
}

// SaveError is the error of the last attempt to write the state file, nil
// when it succeeded (or the cloud keeps no file). datafs.IsFull tells a
// full disk apart; the background writer keeps trying, so a full disk's
// error clears by itself once space is freed.
func (c *Cloud) SaveError() error {
	if c.store == nil {
		return nil
	}
	if p := c.store.lastErr.Load(); p != nil {
		return *p
	}
	return nil
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
	f := c.stateFileLocked()
	c.mu.RUnlock()
	err := s.writeLocked(&f)
	s.lastDur = time.Since(start)
	return err
}

// stateFileLocked copies the state to save; c.mu must be held (read or
// write).
func (c *Cloud) stateFileLocked() stateFile {
	return stateFile{
		Version:       stateVersion,
		SavedAt:       c.now(),
		NextZone:      c.nextZone,
		Instances:     c.instancesLocked(),
		LoadBalancers: c.savedLBsLocked(),
		Routes:        c.routesLocked(),
		LastCallSeq:   c.log.lastSeq(),
		AWS:           c.savedAWSLocked(),
		Faults:        c.savedFaults(),
	}
}

// savedFaults is the faults to save, nil when none is in force.
func (c *Cloud) savedFaults() *Faults {
	f := c.Faults()
	if len(f.Deny) == 0 && f.Latency.Duration == 0 && f.QPS == 0 && f.Burst == 0 && len(f.FailNext) == 0 {
		return nil
	}
	return &f
}

// writeLocked writes f and remembers the outcome; s.mu must be held.
func (s *store) writeLocked(f *stateFile) error {
	err := s.files.WriteFileAtomic(s.path, func(w io.Writer) error { return json.NewEncoder(w).Encode(f) })
	if err != nil {
		err = fmt.Errorf("cloud: save state: %w", err)
		s.lastErr.Store(&err)
		return err
	}
	s.lastErr.Store(nil)
	return nil
}

type syncSaveKey struct{}

// WithSyncSave makes the instance calls made with ctx (RunInstance,
// StopInstance, StartInstance, TerminateInstance) write the state file
// before they return, and undo their change in memory when that write
// fails: a student's click that was answered must survive a crash, and one
// that could not be saved must not half-happen. The error then wraps the
// write's (datafs.IsFull for a full disk) and is not an *Error. Without it
// a call only marks the state dirty: controllers call far more often, and
// retry.
func WithSyncSave(ctx context.Context) context.Context {
	return context.WithValue(ctx, syncSaveKey{}, true)
}

func syncSave(ctx context.Context) bool {
	v, _ := ctx.Value(syncSaveKey{}).(bool)
	return v
}

// lockForChange takes c.mu for a mutation; for a call WithSyncSave it
// first takes the store's writer lock (the lock order Flush uses), so that
// commit can write while nothing else writes or changes state.
func (c *Cloud) lockForChange(ctx context.Context) (saving bool, unlock func()) {
	if c.store == nil || !syncSave(ctx) {
		c.mu.Lock()
		return false, c.mu.Unlock
	}
	c.store.mu.Lock()
	c.mu.Lock()
	return true, func() {
		c.mu.Unlock()
		c.store.mu.Unlock()
	}
}

// commitLocked saves the state after a mutation when saving (see
// lockForChange); if the write fails it calls undo, which puts memory back
// as it was, and returns the write's error. The background writer is told
// to try again, so SaveError clears once the disk has room.
func (c *Cloud) commitLocked(saving bool, undo func()) error {
	if !saving {
		return nil
	}
	f := c.stateFileLocked()
	if err := c.store.writeLocked(&f); err != nil {
		undo()
		c.markDirty()
		return err
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
	if f.Faults != nil {
		// Held to today's bounds: a hand-edited file, or one from a lab
		// with other bounds, must not bring in what SetFaults refuses.
		nf, err := normalizeFaults(*f.Faults)
		if err != nil {
			return 0, fmt.Errorf("cloud: state file %s has faults this ccmlab refuses (%v); move it away to start with an empty cloud", path, err)
		}
		c.applyFaults(nf)
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
		case InstancePending:
			// Saved in the middle of a transition: no timer survives a
			// restart, so it is over.
			inst.State = InstanceRunning
		case InstanceStopping:
			inst.State = InstanceStopped
		case InstanceShuttingDown:
			inst.State = InstanceTerminated
		case InstanceRunning, InstanceStopped, InstanceTerminated:
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
