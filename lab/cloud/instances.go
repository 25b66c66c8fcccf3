package cloud

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// InstanceState follows the EC2 lifecycle. Stop, start and terminate hold
// stopping, pending and shutting-down for Config.InstanceTransition before
// stopped, running and terminated (0: the end state inside the call).
// RunInstance launches straight to running: the lab's own kubelets start
// with it.
type InstanceState string

const (
	InstancePending      InstanceState = "pending"
	InstanceRunning      InstanceState = "running"
	InstanceStopping     InstanceState = "stopping"
	InstanceStopped      InstanceState = "stopped"
	InstanceShuttingDown InstanceState = "shutting-down"
	InstanceTerminated   InstanceState = "terminated"
)

// Instance is a VM; the simulated kubelet turns a running one into a Node.
type Instance struct {
	ID string `json:"id"`
	// Name equals PrivateDNSName: on AWS that is the Node name the kubelet
	// registers, and the Node controller finds the instance by it.
	Name           string        `json:"name"`
	Zone           string        `json:"zone"`
	InstanceType   string        `json:"instanceType"`
	PrivateIP      string        `json:"privateIP"`
	PrivateDNSName string        `json:"privateDNSName"`
	State          InstanceState `json:"state"`
	LaunchTime     time.Time     `json:"launchTime"`
	// StateTransitionTime is when State last changed. A terminated instance
	// stays listed (as on AWS, where the node-lifecycle controller sees it as
	// "terminated") for an hour after it, keeping its IP and DNS name so
	// they cannot be reused by a new instance while anyone may still look
	// them up.
	StateTransitionTime time.Time         `json:"stateTransitionTime"`
	Tags                map[string]string `json:"tags,omitempty"`
	// LaunchedBy is the caller that launched it (WithCaller): the lab's
	// own "ccmlab" at start, an exercise's reset, or CallerUser for a
	// student's launch. Lab state, not an EC2 field (CloudTrail keeps it
	// on AWS); an exercise's reset reads it to take back the VMs launched
	// during the exercise. Empty in state saved before it existed.
	LaunchedBy string `json:"launchedBy,omitempty"`
	// DisableAPITermination is EC2's termination protection: while it
	// is on, TerminateInstances refuses the instance.
	DisableAPITermination bool `json:"disableApiTermination,omitempty"`
}

const terminatedRetention = time.Hour

func (i Instance) clone() Instance {
	i.Tags = cloneTags(i.Tags)
	return i
}

type instanceRec struct {
	Instance
	seq uint64 // launch order
}

// RunInstanceInput asks for one instance. Zone "" places it round-robin over
// the configured zones; InstanceType "" uses Config.DefaultInstanceType.
type RunInstanceInput struct {
	Zone         string            `json:"zone,omitempty"`
	InstanceType string            `json:"instanceType,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	// DisableAPITermination launches it with termination protection on.
	DisableAPITermination bool `json:"-"`
}

// RunInstance launches one instance, running immediately.
func (c *Cloud) RunInstance(ctx context.Context, in RunInstanceInput) (Instance, error) {
	itype := cmp.Or(in.InstanceType, c.cfg.DefaultInstanceType)
	req := fmt.Sprintf("zone=%s type=%s", cmp.Or(in.Zone, "auto"), itype)
	if len(in.Tags) > 0 {
		req += " tags=" + summarizeTags(in.Tags)
	}
	var out Instance
	err := c.call(ctx, ActionRunInstances, req, nil, func(emit emitFunc) (string, error) {
		if msg := instanceTypeProblem(itype); msg != "" {
			return "", errorf(ErrInvalidParameter, "Invalid value '%s' for InstanceType: %s", itype, msg)
		}
		if _, ok := c.net.subnets[in.Zone]; in.Zone != "" && !ok {
			return "", errorf(ErrInvalidParameter, "Invalid availability zone: [%s]; this region has %s",
				in.Zone, strings.Join(c.cfg.Zones, ", "))
		}
		if err := validateTags(in.Tags); err != nil {
			return "", err
		}

		saving, unlock := c.lockForChange(ctx)
		defer unlock()
		now := c.now()
		seq0, zone0 := c.instSeq, c.nextZone
		purged := c.purgeTerminatedLocked(now, emit)
		zone, ip, err := c.placeLocked(in.Zone)
		if err != nil {
			return "", err
		}
		c.instSeq++
		dns := "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + c.cfg.Region + ".compute.internal"
		id := c.newInstanceIDLocked()
		if c.cfg.HostName != nil {
			dns = c.cfg.HostName(id, in.Tags)
		}
		rec := &instanceRec{seq: c.instSeq, Instance: Instance{
			ID:                    id,
			Name:                  dns,
			Zone:                  zone,
			InstanceType:          itype,
			PrivateIP:             ip,
			PrivateDNSName:        dns,
			State:                 InstanceRunning,
			LaunchTime:            now,
			StateTransitionTime:   now,
			Tags:                  cloneTags(in.Tags),
			LaunchedBy:            CallerFrom(ctx),
			DisableAPITermination: in.DisableAPITermination,
		}}
		c.instances[rec.ID] = rec
		c.byDNS[dns] = rec.ID
		emit(EventInstance, rec.ID)
		if err := c.commitLocked(saving, func() {
			c.removeInstanceLocked(rec)
			c.instSeq, c.nextZone = seq0, zone0
			// The new instance may have taken a purged one's IP; it is
			// free again now.
			for _, p := range purged {
				c.addInstanceLocked(p)
			}
		}); err != nil {
			return "", err
		}
		out = rec.clone()
		return fmt.Sprintf("%s %s %s %s", rec.ID, zone, ip, rec.State), nil
	})
	return out, err
}

// placeLocked picks the zone (round-robin when not given, skipping full
// subnets) and allocates the private IP.
func (c *Cloud) placeLocked(zone string) (string, string, error) {
	if zone != "" {
		ip, ok := c.net.subnets[zone].Allocate()
		if !ok {
			return "", "", errorf(ErrNoAddresses, "There are not enough free addresses in the subnet of %s (%s) to satisfy the requested number of instances.",
				zone, c.net.subnets[zone].Prefix())
		}
		return zone, ip.String(), nil
	}
	n := len(c.cfg.Zones)
	for i := range n {
		z := c.cfg.Zones[(c.nextZone+i)%n]
		if ip, ok := c.net.subnets[z].Allocate(); ok {
			c.nextZone = (c.nextZone + i + 1) % n
			return z, ip.String(), nil
		}
	}
	return "", "", errorf(ErrNoAddresses, "Every subnet of VPC %s is full.", c.net.vpc)
}

func (c *Cloud) newInstanceIDLocked() string {
	for {
		var b [9]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
		id := "i-" + hex.EncodeToString(b[:])[:17]
		if _, dup := c.instances[id]; !dup {
			return id
		}
	}
}

// purgeTerminatedLocked forgets instances terminated longer than
// terminatedRetention ago and returns them, for an undo.
func (c *Cloud) purgeTerminatedLocked(now time.Time, emit emitFunc) []*instanceRec {
	var purged []*instanceRec
	for id, rec := range c.instances {
		if rec.State == InstanceTerminated && now.Sub(rec.StateTransitionTime) >= terminatedRetention {
			c.removeInstanceLocked(rec)
			emit(EventInstance, id)
			purged = append(purged, rec)
		}
	}
	return purged
}

// addInstanceLocked puts back an instance removeInstanceLocked took out.
func (c *Cloud) addInstanceLocked(rec *instanceRec) {
	c.instances[rec.ID] = rec
	c.byDNS[rec.PrivateDNSName] = rec.ID
	if sn, ok := c.net.subnets[rec.Zone]; ok {
		_ = sn.Reserve(parseAddr(rec.PrivateIP)) // released by its removal
	}
}

func (c *Cloud) removeInstanceLocked(rec *instanceRec) {
	delete(c.instances, rec.ID)
	c.dropAWSViews()
	delete(c.byDNS, rec.PrivateDNSName)
	if sn, ok := c.net.subnets[rec.Zone]; ok {
		sn.Release(parseAddr(rec.PrivateIP))
	}
}

// DescribeInstancesInput selects instances. IDs must all exist (as on AWS,
// one unknown ID fails the whole call); PrivateDNSNames is a filter and
// matches nothing quietly. Both empty lists every instance, terminated ones
// included.
type DescribeInstancesInput struct {
	IDs             []string `json:"ids,omitempty"`
	PrivateDNSNames []string `json:"privateDNSNames,omitempty"`
}

// DescribeInstances returns instances in request order when IDs are given,
// otherwise in launch order.
func (c *Cloud) DescribeInstances(ctx context.Context, in DescribeInstancesInput) ([]Instance, error) {
	req := "all"
	if len(in.IDs) > 0 || len(in.PrivateDNSNames) > 0 {
		var parts []string
		if len(in.IDs) > 0 {
			parts = append(parts, "ids="+summarize(in.IDs))
		}
		if len(in.PrivateDNSNames) > 0 {
			parts = append(parts, "private-dns-name="+summarize(in.PrivateDNSNames))
		}
		req = strings.Join(parts, " ")
	}
	var out []Instance
	err := c.call(ctx, ActionDescribeInstances, req, append(append([]string(nil), in.IDs...), in.PrivateDNSNames...), func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var recs []*instanceRec
		if len(in.IDs) > 0 {
			var missing []string
			seen := make(map[string]bool, len(in.IDs))
			for _, id := range in.IDs {
				if seen[id] {
					continue
				}
				seen[id] = true
				if rec, ok := c.instances[id]; ok {
					recs = append(recs, rec)
				} else {
					missing = append(missing, id)
				}
			}
			if len(missing) == 1 {
				return "", errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", missing[0])
			} else if len(missing) > 1 {
				return "", errorf(ErrInstanceNotFound, "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
			}
		} else {
			recs = c.sortedInstancesLocked()
		}
		var names map[string]bool
		if len(in.PrivateDNSNames) > 0 {
			names = make(map[string]bool, len(in.PrivateDNSNames))
			for _, n := range in.PrivateDNSNames {
				names[n] = true
			}
		}
		out = make([]Instance, 0, len(recs))
		for _, rec := range recs {
			if names == nil || names[rec.PrivateDNSName] {
				out = append(out, rec.clone())
			}
		}
		if len(out) == 1 {
			return fmt.Sprintf("1 instance: %s %s", out[0].ID, out[0].State), nil
		}
		return fmt.Sprintf("%d instances", len(out)), nil
	})
	return out, err
}

// StopInstance stops a running instance: "stopping" for
// Config.InstanceTransition, then "stopped"; stopping a stopped or stopping
// one is a no-op. Its load balancer targets turn "unused" at once, until
// it runs again.
func (c *Cloud) StopInstance(ctx context.Context, id string) (Instance, error) {
	return c.transition(ctx, ActionStopInstances, id, func(rec *instanceRec, emit emitFunc) error {
		switch rec.State {
		case InstanceTerminated, InstanceShuttingDown, InstancePending:
			return errorf(ErrIncorrectState, "This instance '%s' is not in a state from which it can be stopped.", id)
		case InstanceStopped, InstanceStopping:
			return nil
		}
		c.setInstanceTargetsLocked(id, TargetUnused, reasonInvalidState, emit)
		c.beginLocked(ctx, rec, InstanceStopping, InstanceStopped, emit)
		return nil
	})
}

// StartInstance starts a stopped instance: "pending" for
// Config.InstanceTransition, then "running"; starting a running or pending
// one is a no-op. Its load balancer targets go back to "initial" when it
// runs.
func (c *Cloud) StartInstance(ctx context.Context, id string) (Instance, error) {
	return c.transition(ctx, ActionStartInstances, id, func(rec *instanceRec, emit emitFunc) error {
		switch rec.State {
		case InstanceTerminated, InstanceShuttingDown, InstanceStopping:
			return errorf(ErrIncorrectState, "This instance '%s' is not in a state from which it can be started.", id)
		case InstanceRunning, InstancePending:
			return nil
		}
		c.beginLocked(ctx, rec, InstancePending, InstanceRunning, emit)
		return nil
	})
}

// TerminateInstance terminates an instance: "shutting-down" for
// Config.InstanceTransition, then "terminated"; terminating twice is a
// no-op. Like ELB, the cloud deregisters it from every load balancer at
// once; routes to it turn into blackholes when it is terminated (see
// Route.State).
func (c *Cloud) TerminateInstance(ctx context.Context, id string) (Instance, error) {
	return c.transition(ctx, ActionTerminateInstances, id, func(rec *instanceRec, emit emitFunc) error {
		if rec.State == InstanceTerminated || rec.State == InstanceShuttingDown {
			return nil
		}
		if rec.DisableAPITermination {
			// AWS's words for the same refusal of StopInstances under
			// disableApiStop, with the termination attribute's name.
			return errorf(ErrOperationNotPermitted, "The instance '%s' may not be terminated. Modify its 'disableApiTermination' instance attribute and try again.", id)
		}
		c.dropInstanceTargetsLocked(id, emit)
		c.beginLocked(ctx, rec, InstanceShuttingDown, InstanceTerminated, emit)
		return nil
	})
}

// beginLocked moves rec into the transitional state during, and to end
// after Config.InstanceTransition (at once when that is 0, or for a ctx
// made by WithImmediateTransition), as EC2 holds pending, stopping and
// shutting-down for a while before running, stopped and terminated.
func (c *Cloud) beginLocked(ctx context.Context, rec *instanceRec, during, end InstanceState, emit emitFunc) {
	d := c.cfg.InstanceTransition
	if immediate, _ := ctx.Value(immediateKey{}).(bool); d <= 0 || immediate {
		c.setStateLocked(rec, end, emit)
		c.arrivedLocked(rec, emit)
		return
	}
	c.setStateLocked(rec, during, emit)
	c.trans.after(c.clock, d, func() { c.finishTransition(rec.ID, during, end) })
}

type immediateKey struct{}

// WithImmediateTransition makes the instance calls under ctx reach the end
// state inside the call: the lab's own resets put the world back at once,
// where a student's call waits as on EC2.
func WithImmediateTransition(ctx context.Context) context.Context {
	return context.WithValue(ctx, immediateKey{}, true)
}

// transitions are the timers of the state transitions under way; Close
// stops them, and a transition saved unfinished is over when the state
// loads (restore).
type transitions struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	stopped bool
	stopCh  chan struct{}
}

// after runs f once d has passed on clk, unless stop comes first.
func (t *transitions) after(clk clock.WithTicker, d time.Duration, f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if t.stopCh == nil {
		t.stopCh = make(chan struct{})
	}
	timer, stop := clk.NewTimer(d), t.stopCh
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		select {
		case <-timer.C():
			f()
		case <-stop:
			timer.Stop()
		}
	}()
}

// stop ends every pending transition's timer and waits for any that is
// finishing.
func (t *transitions) stop() {
	t.mu.Lock()
	if !t.stopped {
		t.stopped = true
		if t.stopCh != nil {
			close(t.stopCh)
		}
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// arrivedLocked is what reaching rec's state does besides the state.
func (c *Cloud) arrivedLocked(rec *instanceRec, emit emitFunc) {
	switch rec.State {
	case InstanceRunning:
		rec.LaunchTime = rec.StateTransitionTime // EC2 resets LaunchTime on start
		c.setInstanceTargetsLocked(rec.ID, TargetInitial, reasonRegistering, emit)
	case InstanceTerminated:
		for _, r := range c.routes {
			if r.InstanceID == rec.ID {
				emit(EventRoute, r.DestinationCIDR)
			}
		}
	}
}

// finishTransition ends a transition begun by beginLocked, unless the
// instance has moved on since (terminated while stopping, say). It is no
// API call: nothing in the call log, as EC2's own state changes are not
// in CloudTrail.
func (c *Cloud) finishTransition(id string, during, end InstanceState) {
	var events []Event
	emit := func(kind, id string) {
		switch kind {
		case EventLoadBalancer:
			c.dropView(id)
		case EventELB:
			c.dropAWSView(id)
		}
		events = append(events, Event{Kind: kind, ID: id})
	}
	saving, unlock := c.lockForChange(context.Background())
	rec, ok := c.instances[id]
	if !ok || rec.State != during {
		unlock()
		return
	}
	var undo func()
	if saving {
		undo = c.instanceUndoLocked(rec)
	}
	c.setStateLocked(rec, end, emit)
	c.arrivedLocked(rec, emit)
	err := c.commitLocked(saving, undo)
	unlock()
	if err != nil {
		// The disk is full: the state stays transitional in memory too,
		// and the next try comes after another transition time.
		slog.Warn("cloud: instance state change not saved; trying again", "instance", id, "state", end, "err", err)
		c.trans.after(c.clock, c.cfg.InstanceTransition, func() { c.finishTransition(id, during, end) })
		return
	}
	c.markDirty()
	for _, ev := range events {
		c.publish(ev)
	}
}

func (c *Cloud) transition(ctx context.Context, action, id string, fn func(*instanceRec, emitFunc) error) (Instance, error) {
	var out Instance
	err := c.call(ctx, action, "id="+id, []string{id}, func(emit emitFunc) (string, error) {
		saving, unlock := c.lockForChange(ctx)
		defer unlock()
		rec, ok := c.instances[id]
		if !ok {
			return "", errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", id)
		}
		before := rec.State
		var undo func()
		if saving {
			undo = c.instanceUndoLocked(rec)
		}
		if err := fn(rec, emit); err != nil {
			return "", err
		}
		if err := c.commitLocked(saving, undo); err != nil {
			return "", err
		}
		out = rec.clone()
		if before == rec.State {
			return fmt.Sprintf("%s %s (unchanged)", id, rec.State), nil
		}
		return fmt.Sprintf("%s %s -> %s", id, before, rec.State), nil
	})
	return out, err
}

// instanceUndoLocked remembers what a state transition of rec may change
// (the instance, and the load balancers that have it as a target) and
// returns the function that puts it back.
func (c *Cloud) instanceUndoLocked(rec *instanceRec) func() {
	inst := rec.clone()
	lbs := map[string]LoadBalancer{}
	for name, lb := range c.lbs {
		if lb.TargetType != TargetTypeInstance {
			continue
		}
		if i := firstTarget(lb.Targets, rec.ID); i < len(lb.Targets) && lb.Targets[i].ID == rec.ID {
			lbs[name] = lb.clone()
		}
	}
	return func() {
		rec.Instance = inst
		c.dropAWSViews()
		for name, lb := range lbs {
			*c.lbs[name] = lb
			c.dropView(name)
		}
	}
}

func (c *Cloud) setStateLocked(rec *instanceRec, s InstanceState, emit emitFunc) {
	rec.State = s
	rec.StateTransitionTime = c.now()
	c.dropAWSViews()
	emit(EventInstance, rec.ID)
}

func (c *Cloud) sortedInstancesLocked() []*instanceRec {
	recs := slices.Collect(maps.Values(c.instances))
	slices.SortFunc(recs, func(a, b *instanceRec) int { return cmp.Compare(a.seq, b.seq) })
	return recs
}

func (c *Cloud) instancesLocked() []Instance {
	recs := c.sortedInstancesLocked()
	out := make([]Instance, len(recs))
	for i, r := range recs {
		out[i] = r.clone()
	}
	return out
}

// instanceTypeProblem returns why s is not shaped like an EC2 instance type
// ("family.size"), or "". The lab has no price list, so any such name works.
func instanceTypeProblem(s string) string {
	family, size, ok := strings.Cut(s, ".")
	if !ok || family == "" || size == "" || strings.Contains(size, ".") || len(s) > 64 {
		return `want "family.size", like "m5.large"`
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.') {
			return `only lowercase letters, digits, "-" and "." are allowed`
		}
	}
	return ""
}

func isInstanceID(s string) bool {
	if len(s) != 19 || !strings.HasPrefix(s, "i-") {
		return false
	}
	for i := 2; i < len(s); i++ {
		if ch := s[i]; !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// validateTags applies EC2's tag limits, so bad tags fail here rather than
// later on a real cloud.
func validateTags(tags map[string]string) error {
	for k, v := range tags {
		switch {
		case k == "" || len(k) > 128:
			return errorf(ErrInvalidParameter, "Tag key '%s' must be 1-128 characters", k)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return errorf(ErrInvalidParameter, "Tag key '%s' uses the reserved prefix 'aws:'", k)
		case len(v) > 256:
			return errorf(ErrInvalidParameter, "Tag value for key '%s' is longer than 256 characters", k)
		}
	}
	return nil
}

func cloneTags(t map[string]string) map[string]string {
	if len(t) == 0 {
		return nil
	}
	return maps.Clone(t)
}

func summarizeTags(t map[string]string) string {
	keys := slices.Sorted(maps.Keys(t))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + t[k]
	}
	return summarize(parts)
}
