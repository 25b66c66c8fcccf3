package labapi

import (
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// The flows of the live stream (types "serviceflow" and "nodeflow", and
// the snapshot's serviceFlows and nodeFlows), derived by package flow.

// StepStatus is how far a step has got.
type StepStatus string

const (
	StepDone    StepStatus = "done"
	StepCurrent StepStatus = "current" // the next thing that should happen
	StepStuck   StepStatus = "stuck"   // the next thing, and it cannot happen now
	StepPending StepStatus = "pending" // later
)

// Step is one box of a strip.
type Step struct {
	N      int        `json:"n"`
	Key    string     `json:"key"` // stable id the page translates ("apply", "notice", ...)
	Status StepStatus `json:"status"`
	// At is when the evidence says it happened (an event's or a call's
	// time), falling back to when the lab first saw it.
	At time.Time `json:"at,omitzero"`
	// EvidenceKey and EvidenceArgs name what proved the step as a
	// flowtext key and its arguments, so the page says it in its own
	// language. Evidence is the same in English, for API readers, e.g.
	// "event EnsuringLoadBalancer from service-controller".
	EvidenceKey  string    `json:"evidenceKey,omitempty"`
	EvidenceArgs i18n.Args `json:"evidenceArgs,omitempty"`
	Evidence     string    `json:"evidence,omitempty"`
}

// Stuck says why the current step cannot happen. MessageKey and
// MessageArgs are the specifics as a flowtext key; Message is the same in
// English, for API readers and logs.
type Stuck struct {
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	MessageKey  string    `json:"messageKey,omitempty"`
	MessageArgs i18n.Args `json:"messageArgs,omitempty"`
}

// NodeFlow is where one node stands in its initialization.
type NodeFlow struct {
	Node       string `json:"node"`
	InstanceID string `json:"instanceID,omitempty"`
	Step       int    `json:"step"`
	Steps      []Step `json:"steps"`
	Stuck      *Stuck `json:"stuck,omitempty"`
}

// ServiceFlow is where one LoadBalancer Service stands.
type ServiceFlow struct {
	Service string `json:"service"` // namespace/name
	LB      string `json:"lb,omitempty"`
	// Handler is who should act on the Service: "service-controller",
	// "lbc" (the add-on) or "" when nobody can.
	Handler string `json:"handler"`
	// Step is the last step done (0-6).
	Step  int    `json:"step"`
	Steps []Step `json:"steps"`
	Stuck *Stuck `json:"stuck,omitempty"`
}

// Flows are the flows of a stream snapshot (the snapshot's serviceFlows
// and nodeFlows): what a reader that follows only the flows decodes a
// snapshot message's data into. The snapshot holds much more (server/stream
// Snapshot); JSON decoding leaves the rest out.
type Flows struct {
	ServiceFlows []ServiceFlow `json:"serviceFlows"`
	NodeFlows    []NodeFlow    `json:"nodeFlows"`
}
