package flow

import (
	"strconv"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

// ServiceSteps are the six steps of a LoadBalancer Service.
var serviceStepKeys = []string{"apply", "notice", "create", "targets", "status", "traffic"}

// ServiceStepKeys returns the step keys in order.
func ServiceStepKeys() []string { return append([]string(nil), serviceStepKeys...) }

// ClassAWSNLB is the loadBalancerClass the lab's load-balancer-controller
// add-on handles.
const ClassAWSNLB = "service.k8s.aws/nlb"

// ServiceFlow is one LoadBalancer Service's strip of steps (labapi).
type ServiceFlow = labapi.ServiceFlow

// serviceInput is everything the derivation looks at, gathered by the
// Observer. Keeping it a plain struct makes the rules table-testable.
type serviceInput struct {
	svc    ServiceView
	lbName string
	lb     *cloud.LoadBalancer
	// awsLB is the Classic ELB or NLB of the upstream AWS provider, when
	// that provider made it (lb is then nil).
	awsLB         *cloud.LoadBalancer
	events        []EventView  // about this Service, oldest first
	calls         []cloud.Call // about its LB, oldest first
	lastTrace     *TraceInfo
	controllers   map[string]bool
	eligibleNodes int
	endpoints     int // ready endpoints of the Service
}

// TraceInfo is the part of a data-plane trace the flow needs.
type TraceInfo struct {
	ID      string `json:"id"`
	LB      string `json:"lb"`
	Service string `json:"service"`
	// ServiceUID is the Service's UID when the data plane knew it: a
	// request to an earlier Service of the same name is not this one's.
	ServiceUID string    `json:"serviceUID,omitempty"`
	Status     int       `json:"status"`
	Time       time.Time `json:"time"`
}

func lastEvent(events []EventView, reasons ...string) (EventView, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		for _, r := range reasons {
			if events[i].Reason == r {
				return events[i], true
			}
		}
	}
	return EventView{}, false
}

func handlerFor(in serviceInput) (string, *Stuck) {
	switch in.svc.LoadBalancerClass {
	case "":
		if !in.controllers["service"] {
			return "", newStuck(ReasonNoServiceController, flowtext.StuckNoServiceController, nil)
		}
		return "service-controller", nil
	case ClassAWSNLB:
		if !in.controllers["lbc"] {
			return "", newStuck(ReasonClassUnhandled, flowtext.StuckAddonOff, i18n.Args{"class": in.svc.LoadBalancerClass})
		}
		return "lbc", nil
	default:
		return "", newStuck(ReasonClassUnhandled, flowtext.StuckClassUnknown, i18n.Args{"class": in.svc.LoadBalancerClass})
	}
}

// ownEvents keeps the events about this very Service: one deleted and
// created again under its name has another UID, and its events (kept
// by name) are not this one's evidence.
func ownEvents(events []EventView, uid string) []EventView {
	if uid == "" {
		return events
	}
	var out []EventView
	for _, e := range events {
		if e.UID == "" || e.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

func deriveService(in serviceInput, firstSeen map[int]time.Time) ServiceFlow {
	in.events = ownEvents(in.events, in.svc.UID)
	if t := in.lastTrace; t != nil && t.ServiceUID != "" && in.svc.UID != "" && t.ServiceUID != in.svc.UID {
		in.lastTrace = nil
	}
	f := ServiceFlow{Service: in.svc.Key(), LB: in.lbName}
	handler, stuck := handlerFor(in)
	f.Handler = handler

	ev := make([]evidence, 6)
	ev[0] = proof(in.svc.Created, flowtext.ServiceStored, "ip", in.svc.ClusterIP, "ports", in.svc.Ports)
	if e, ok := firstEvent(in.events, "EnsuringLoadBalancer"); ok {
		ev[1] = proof(e.First(), flowtext.Event, "reason", e.Reason, "source", e.Source)
	} else if hasAny(in.svc.Finalizers, FinalizerLBCleanup, "service.k8s.aws/resources") {
		ev[1] = proof(time.Time{}, flowtext.Finalizer, "name", in.svc.Finalizers[0])
	} else if len(in.calls) > 0 {
		// A cloud call about this Service's LB proves a controller noticed
		// it, even when that call's record arrives before the watch shows
		// the finalizer or the event (they travel on different streams).
		c := in.calls[0]
		ev[1] = proof(c.Time, flowtext.Call, "action", c.Action, "caller", c.Caller)
	}
	ev[2], ev[3] = lbSteps(in)
	if len(in.svc.Ingress) > 0 {
		ingress := strings.Join(in.svc.Ingress, ",")
		ev[4] = proof(time.Time{}, flowtext.Ingress, "ingress", ingress)
		if e, ok := firstEvent(in.events, "EnsuredLoadBalancer", "SuccessfullyReconciled"); ok {
			ev[4] = proof(e.First(), flowtext.IngressEvent, "ingress", ingress, "reason", e.Reason)
		}
	}
	if t := in.lastTrace; t != nil && t.Status >= 200 && t.Status < 400 {
		ev[5] = proof(t.Time, flowtext.Answered, "id", t.ID, "status", strconv.Itoa(t.Status))
	}

	// Decide why the next step cannot happen, most fundamental first.
	_, done := strip(serviceStepKeys, ev, nil, firstSeen)
	if done < 6 && stuck == nil {
		stuck = stuckInCloud(in, done)
	}
	if stuck != nil && done >= 5 {
		stuck = nil // nothing blocks a request but the student sending one
	}
	f.Steps, f.Step = strip(serviceStepKeys, ev, stuck, firstSeen)
	if f.Step < 6 {
		f.Stuck = stuck
	}
	return f
}

// lbSteps is the evidence of steps 3 (the load balancer is created) and 4
// (its targets and health check are set), from the calls that did it and
// from the load balancer as the cloud has it now: the lab's own, or the
// upstream provider's Classic ELB or NLB (awscalls.go).
func lbSteps(in serviceInput) (created, targets evidence) {
	service := ""
	if in.awsLB != nil {
		service = awsServiceOf(in.awsLB)
	}
	if c, ok := lastServiceCall(in.calls, service, cloud.ActionCreateLoadBalancer); ok {
		if c.Service != "" {
			created = proof(c.Time, flowtext.CallAPI, "api", apiName(c.Service), "action", c.Action, "caller", c.Caller)
		} else {
			created = proof(c.Time, flowtext.Call, "action", c.Action, "caller", c.Caller)
		}
	} else if in.lb != nil {
		created = proof(in.lb.CreatedAt, flowtext.LBExists, "name", in.lb.Name)
	} else if in.awsLB != nil {
		created = proof(in.awsLB.CreatedAt, flowtext.LBExists, "name", in.awsLB.Name)
	}
	// Step 4 happened when its calls were first made after the load
	// balancer's creation, not when a later sync made them again (a
	// node that joined re-registers targets minutes later, and step 4
	// would then show a time after step 5's).
	actions := targetActions(service)
	at := time.Time{}
	if c, ok := firstServiceCallAfter(in.calls, service, created.at, actions...); ok {
		at = c.Time
	}
	switch {
	case in.lb != nil && len(in.lb.Targets) > 0 && in.lb.HealthCheck != nil:
		targets = proof(at, flowtext.Targets, "n", strconv.Itoa(len(in.lb.Targets)), "mode", string(in.lb.TargetType),
			"proto", in.lb.HealthCheck.Protocol, "port", strconv.Itoa(int(in.lb.HealthCheck.Port)))
	case in.awsLB != nil && len(in.awsLB.Targets) > 0 && in.awsLB.HealthCheck != nil && len(in.awsLB.Listeners) > 0:
		targets = proof(at, flowtext.TargetsAWS, "n", strconv.Itoa(awsTargetCount(in.awsLB)), "hc", in.awsLB.HealthCheck.Target(),
			"api", apiName(service), "actions", strings.Join(actions, " + "))
	}
	return created, targets
}

// lastServiceCall is lastCall (successful calls) restricted to one API:
// the lab's ("") or an AWS service.
func lastServiceCall(calls []cloud.Call, service string, actions ...string) (cloud.Call, bool) {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.State != cloud.CallDone || c.Error != "" || c.Service != service {
			continue
		}
		for _, a := range actions {
			if c.Action == a {
				return c, true
			}
		}
	}
	return cloud.Call{}, false
}

// firstServiceCallAfter is the earliest successful call of one of the
// actions of an API at or after since (any time when since is zero).
func firstServiceCallAfter(calls []cloud.Call, service string, since time.Time, actions ...string) (cloud.Call, bool) {
	for _, c := range calls {
		if c.State != cloud.CallDone || c.Error != "" || c.Service != service || c.Time.Before(since) {
			continue
		}
		for _, a := range actions {
			if c.Action == a {
				return c, true
			}
		}
	}
	return cloud.Call{}, false
}

// firstEvent is the earliest of this Service's events with one of the
// reasons (an event that repeats stays one object; First() is its first
// occurrence).
func firstEvent(events []EventView, reasons ...string) (EventView, bool) {
	for _, e := range events {
		for _, r := range reasons {
			if e.Reason == r {
				return e, true
			}
		}
	}
	return EventView{}, false
}

func stuckInCloud(in serviceInput, done int) *Stuck {
	if done < 1 || done >= 5 {
		if done >= 5 && in.endpoints == 0 {
			return newStuck(ReasonNoEndpoints, flowtext.StuckNoEndpoints, nil)
		}
		return nil
	}
	// The most recent failure wins unless a later success superseded it.
	failed, hasFail := lastCallAny(in.calls, false)
	if ok, hasOK := lastCallAny(in.calls, true); hasFail && (!hasOK || failed.Seq > ok.Seq) {
		return newStuck(ReasonCloudError, flowtext.StuckCloudRefused, i18n.Args{"action": failed.Action, "error": failed.Error})
	}
	if e, ok := lastEvent(in.events, "SyncLoadBalancerFailed", "FailedDeployModel"); ok {
		if good, ok2 := lastEvent(in.events, "EnsuredLoadBalancer", "SuccessfullyReconciled"); !ok2 || good.Time.Before(e.Time) {
			return newStuck(ReasonCloudError, flowtext.StuckFailedEvent, i18n.Args{"reason": e.Reason, "message": e.Message})
		}
	}
	if done == 3 && in.eligibleNodes == 0 && in.svc.LoadBalancerClass == "" {
		return newStuck(ReasonNoEligibleNodes, flowtext.StuckNoEligibleNodes, nil)
	}
	return nil
}

// lastCallAny returns the most recent finished call that succeeded (ok) or
// was refused (!ok). A "not found" answer is neither: asking whether a load
// balancer exists before creating it is how every sync starts, and "no" is
// an answer, not a refusal.
func lastCallAny(calls []cloud.Call, ok bool) (cloud.Call, bool) {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.State != cloud.CallDone || notFoundAnswer(c) {
			continue
		}
		if (c.Error == "") == ok {
			return c, true
		}
	}
	return cloud.Call{}, false
}

func notFoundAnswer(c cloud.Call) bool {
	switch c.ErrorCode {
	case cloud.ErrLBNotFound, cloud.ErrInstanceNotFound, cloud.ErrRouteNotFound,
		cloud.ErrTargetGroupNotFound, cloud.ErrListenerNotFound, cloud.ErrGroupNotFound:
		return true
	}
	return false
}

func hasAny(list []string, want ...string) bool {
	for _, x := range list {
		for _, w := range want {
			if x == w {
				return true
			}
		}
	}
	return false
}
