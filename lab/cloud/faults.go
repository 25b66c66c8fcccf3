package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ccmlab/ccmlab/internal/labapi"
)

// Action names, as AWS spells them (ModifyListeners and ConfigureHealthCheck
// stand for the ELB calls that change listeners and health checks). They are
// the vocabulary of the call log, of Faults.Deny and of Faults.FailNext.
const (
	ActionRunInstances          = "RunInstances"
	ActionDescribeInstances     = "DescribeInstances"
	ActionStopInstances         = "StopInstances"
	ActionStartInstances        = "StartInstances"
	ActionTerminateInstances    = "TerminateInstances"
	ActionCreateLoadBalancer    = "CreateLoadBalancer"
	ActionDescribeLoadBalancers = "DescribeLoadBalancers"
	ActionModifyListeners       = "ModifyListeners"
	ActionRegisterTargets       = "RegisterTargets"
	ActionDeregisterTargets     = "DeregisterTargets"
	ActionConfigureHealthCheck  = "ConfigureHealthCheck"
	ActionDeleteLoadBalancer    = "DeleteLoadBalancer"
	ActionCreateRoute           = "CreateRoute"
	ActionDeleteRoute           = "DeleteRoute"
	ActionDescribeRouteTables   = "DescribeRouteTables"
)

// Actions returns every API action name, sorted. It returns a fresh slice so
// callers may modify it.
func Actions() []string {
	a := []string{
		ActionRunInstances, ActionDescribeInstances, ActionStopInstances,
		ActionStartInstances, ActionTerminateInstances,
		ActionCreateLoadBalancer, ActionDescribeLoadBalancers, ActionModifyListeners,
		ActionRegisterTargets, ActionDeregisterTargets, ActionConfigureHealthCheck,
		ActionDeleteLoadBalancer,
		ActionCreateRoute, ActionDeleteRoute, ActionDescribeRouteTables,
	}
	slices.Sort(a)
	return a
}

// iamService is the IAM namespace of an action, used in AccessDenied
// messages so they read like the ones students will meet on AWS.
func iamService(action string) string {
	switch action {
	case ActionCreateLoadBalancer, ActionDescribeLoadBalancers, ActionModifyListeners,
		ActionRegisterTargets, ActionDeregisterTargets, ActionConfigureHealthCheck,
		ActionDeleteLoadBalancer:
		return "elasticloadbalancing"
	default:
		return "ec2"
	}
}

// denial is the refusal of a denied action. The lab's own API keeps its
// short form; through the AWS API it reads as AWS words an implicit deny
// (the IAM User Guide's "because no identity-based policy allows the ...
// action"), EC2's UnauthorizedOperation starting "You are not authorized to
// perform this operation." (https://repost.aws/knowledge-center/ec2-not-auth-launch).
// ELB and ELBv2 share one IAM prefix, elasticloadbalancing
// (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html).
func denial(action, caller, service string) *Error {
	prefix := cmp.Or(service, iamService(action))
	if prefix == ServiceELBv2 {
		prefix = ServiceELB
	}
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s:%s", CallerARN(caller), prefix, action)
	switch service {
	case "":
		return &Error{Code: ErrAccessDenied, Message: msg}
	case ServiceEC2:
		return &Error{Code: ErrUnauthorizedOperation, Message: "You are not authorized to perform this operation. " + msg +
			fmt.Sprintf(" because no identity-based policy allows the %s:%s action", prefix, action)}
	}
	return &Error{Code: ErrAccessDenied, Message: msg + fmt.Sprintf(" because no identity-based policy allows the %s:%s action", prefix, action)}
}

// CallerARN is who a caller is to IAM: a session of the lab's role
// ccmlab-ccm named after the caller. Denials name it, and STS
// GetCallerIdentity answers it.
func CallerARN(caller string) string {
	return "arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/" + caller
}

func isAction(s string) bool {
	_, found := slices.BinarySearch(Actions(), s)
	if !found {
		_, found = slices.BinarySearch(wireActions, s)
	}
	return found
}

// Faults, Duration and their bounds are wire types of the lab's HTTP API
// (GET/PUT /api/cloud/faults), defined in internal/labapi so that the
// classroom reads them without linking the cloud.
type (
	Faults   = labapi.Faults
	Duration = labapi.Duration
)

// Bounds of Faults (labapi says why).
const (
	MaxLatency = labapi.MaxLatency
	MaxQPS     = labapi.MaxQPS
	MaxBurst   = labapi.MaxBurst
)

func cloneFaults(f Faults) Faults {
	f.Deny = slices.Clone(f.Deny)
	if f.Deny == nil {
		// [] rather than null in JSON: the page shows "nothing denied".
		f.Deny = []string{}
	}
	if len(f.FailNext) > 0 {
		f.FailNext = maps.Clone(f.FailNext)
	} else {
		f.FailNext = nil
	}
	return f
}

// normalizeFaults validates f and returns the form that will be in
// effect.
func normalizeFaults(f Faults) (Faults, error) {
	var errs []error
	var unknown []string
	deny := map[string]bool{}
	for _, a := range f.Deny {
		if !isAction(a) {
			unknown = append(unknown, a)
		}
		deny[a] = true
	}
	for a, n := range f.FailNext {
		if !isAction(a) {
			unknown = append(unknown, a)
		}
		if n < 0 {
			errs = append(errs, fmt.Errorf("failNext[%s] = %d: must not be negative", a, n))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		unknown = slices.Compact(unknown)
		errs = append(errs, fmt.Errorf("unknown action(s) %s; valid actions: %s",
			strings.Join(unknown, ", "), strings.Join(Actions(), ", ")))
	}
	if f.Latency.Duration < 0 {
		errs = append(errs, fmt.Errorf("latency %s: must not be negative", f.Latency))
	} else if f.Latency.Duration > MaxLatency {
		errs = append(errs, fmt.Errorf("latency %s: must be at most %s", f.Latency, Duration{Duration: MaxLatency}))
	}
	if f.QPS < 0 || math.IsNaN(f.QPS) || math.IsInf(f.QPS, 0) {
		errs = append(errs, fmt.Errorf("qps %v: must be a finite number >= 0 (0 = unlimited)", f.QPS))
	} else if f.QPS > MaxQPS {
		errs = append(errs, fmt.Errorf("qps %v: must be at most %d (0 = unlimited)", f.QPS, MaxQPS))
	}
	if f.Burst < 0 {
		errs = append(errs, fmt.Errorf("burst %d: must not be negative", f.Burst))
	} else if f.Burst > MaxBurst {
		errs = append(errs, fmt.Errorf("burst %d: must be at most %d", f.Burst, MaxBurst))
	}
	if err := errors.Join(errs...); err != nil {
		return Faults{}, fmt.Errorf("cloud: invalid faults: %w", err)
	}
	out := Faults{Deny: slices.Sorted(maps.Keys(deny)), Latency: f.Latency, QPS: f.QPS, Burst: f.Burst}
	if out.QPS > 0 && out.Burst == 0 {
		out.Burst = max(1, int(math.Ceil(out.QPS)))
	}
	for a, n := range f.FailNext {
		if n > 0 {
			if out.FailNext == nil {
				out.FailNext = map[string]int{}
			}
			out.FailNext[a] = n
		}
	}
	return cloneFaults(out), nil
}

// faultState is guarded by its own mutex so that checking faults never
// contends with the state lock.
type faultState struct {
	mu      sync.Mutex
	f       Faults
	deny    map[string]bool
	limiter *rate.Limiter // nil = unlimited
}

func (c *Cloud) Faults() Faults {
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	return cloneFaults(c.faults.f)
}

// SetFaults replaces the injected faults as a whole. On error nothing
// changes. Changing only Deny, Latency or FailNext keeps the rate limiter's
// bucket as it is, so toggling a deny does not hand out a fresh burst.
//
// Faults are part of the cloud's saved state (persist.go): an injected
// deny, limit or latency (a mystery cause, an instructor's demo) is still
// in force after the lab restarts.
func (c *Cloud) SetFaults(f Faults) error {
	nf, err := normalizeFaults(f)
	if err != nil {
		return err
	}
	c.applyFaults(nf)
	c.publish(Event{Kind: EventFaults})
	c.markDirty()
	return nil
}

// applyFaults puts normalized faults in force.
func (c *Cloud) applyFaults(nf Faults) {
	fs := &c.faults
	fs.mu.Lock()
	if nf.QPS != fs.f.QPS || nf.Burst != fs.f.Burst || (fs.limiter == nil) != (nf.QPS == 0) {
		fs.limiter = nil
		if nf.QPS > 0 {
			fs.limiter = rate.NewLimiter(rate.Limit(nf.QPS), nf.Burst)
		}
	}
	fs.f = nf
	fs.deny = make(map[string]bool, len(nf.Deny))
	for _, a := range nf.Deny {
		fs.deny[a] = true
	}
	fs.mu.Unlock()
}

func (c *Cloud) latency() time.Duration {
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	return c.faults.f.Latency.Duration
}

// admit runs the IAM, rate limit and injected-failure checks in that order,
// under one lock so a denied call never spends a token and a throttled call
// never consumes a FailNext. consumed reports that FailNext changed.
func (c *Cloud) admit(action, caller, service string) (consumed bool, err error) {
	fs := &c.faults
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.deny[action] {
		// EC2 and ELB spell a denial and a throttle differently; an SDK
		// (and a student reading its error) sees the code of the service.
		return false, denial(action, caller, service)
	}
	if fs.limiter != nil && !fs.limiter.AllowN(c.clock.Now(), 1) {
		if service == ServiceEC2 {
			return false, &Error{Code: ErrRequestLimitExceeded, Message: "Request limit exceeded."}
		}
		return false, &Error{Code: ErrThrottling, Message: "Rate exceeded"}
	}
	if n := fs.f.FailNext[action]; n > 0 {
		if n == 1 {
			delete(fs.f.FailNext, action)
		} else {
			fs.f.FailNext[action] = n - 1
		}
		return true, &Error{Code: ErrInjected, Message: fmt.Sprintf(
			"We encountered an internal error. Please try again. (injected by ccmlab; %d more %s failure(s) queued)", n-1, action)}
	}
	return false, nil
}

// stepState holds calls in step mode. on is read without the lock on every
// call so that, with step mode off, calls never touch mu.
type stepState struct {
	on   atomic.Bool
	mu   sync.Mutex
	held []*hold // oldest first
}

type hold struct {
	call    Call
	release chan struct{}
}

// SetStepMode turns step mode on or off. Turning it off releases every held
// call, so an instructor can never leave controllers stuck.
func (c *Cloud) SetStepMode(on bool) {
	s := &c.step
	s.mu.Lock()
	changed := s.on.Load() != on
	s.on.Store(on)
	if !on {
		for _, h := range s.held {
			close(h.release)
		}
		s.held = nil
	}
	s.mu.Unlock()
	if changed {
		c.publish(Event{Kind: EventStepMode})
	}
}

func (c *Cloud) StepMode() bool { return c.step.on.Load() }

// Waiting returns the calls currently held, oldest first.
func (c *Cloud) Waiting() []Call {
	c.step.mu.Lock()
	defer c.step.mu.Unlock()
	out := make([]Call, len(c.step.held))
	for i, h := range c.step.held {
		out[i] = h.call
	}
	return out
}

// Release lets the oldest held call proceed and returns it as it was when it
// was held. It reports false when nothing is held.
func (c *Cloud) Release() (Call, bool) {
	s := &c.step
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return Call{}, false
	}
	h := s.held[0]
	s.held[0] = nil
	s.held = s.held[1:]
	close(h.release)
	return h.call, true
}

// beginCall logs the call, as waiting and queued when step mode is on; the
// check and the enqueue happen under one lock so SetStepMode(false) cannot
// slip between them and strand the call.
func (c *Cloud) beginCall(call Call) (Call, *hold) {
	if !c.step.on.Load() {
		return c.log.append(call), nil
	}
	s := &c.step
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on.Load() {
		return c.log.append(call), nil
	}
	call.State = CallWaiting
	call = c.log.append(call)
	h := &hold{call: call, release: make(chan struct{})}
	s.held = append(s.held, h)
	return call, h
}

// unhold drops a call whose caller gave up; Release must not hand it out.
func (c *Cloud) unhold(h *hold) {
	s := &c.step
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.held, h); i >= 0 {
		s.held = slices.Delete(s.held, i, i+1)
	}
}

// ErrDryRunOperation is EC2's answer to a DryRun request the caller may
// make; a denied one gets UnauthorizedOperation instead
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/CommonParameters.html,
// DryRun).
const ErrDryRunOperation = "DryRunOperation"

// DryRun answers an EC2 request made with DryRun=true: it runs the call
// pipeline (step mode, latency, the IAM deny, the rate limit) as the
// action would, and changes nothing. The call log shows the dry run.
func (c *Cloud) DryRun(ctx context.Context, action string, resources []string) error {
	return c.call(ctx, action, "dry run", resources, func(emitFunc) (string, error) {
		return "", &Error{Code: ErrDryRunOperation, Message: "Request would have succeeded, but DryRun flag is set."}
	})
}
