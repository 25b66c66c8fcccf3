package flow

import (
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

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

// Reason codes for a step that cannot happen. The page translates the code
// and shows the specifics (MessageKey filled with MessageArgs) beside it.
const (
	ReasonNoServiceController = "no-service-controller"
	ReasonClassUnhandled      = "class-unhandled"
	ReasonCloudError          = "cloud-error"
	ReasonNoEligibleNodes     = "no-eligible-nodes"
	ReasonNoNodeController    = "no-node-controller"
	ReasonInstanceNotRunning  = "instance-not-running"
	ReasonNoEndpoints         = "no-endpoints"
)

// Stuck says why the current step cannot happen. MessageKey and
// MessageArgs are the specifics as a flowtext key; Message is the same in
// English, for API readers and logs.
type Stuck struct {
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	MessageKey  string    `json:"messageKey,omitempty"`
	MessageArgs i18n.Args `json:"messageArgs,omitempty"`
}

// newStuck builds a Stuck from a reason code and a flowtext message.
func newStuck(reason, key string, args i18n.Args) *Stuck {
	m := i18n.Msg{Key: key, Args: args}
	return &Stuck{Reason: reason, Message: flowtext.English(m), MessageKey: key, MessageArgs: args}
}

// Text is the stuck detail in both languages.
func (s *Stuck) Text() i18n.Text {
	if s.MessageKey == "" {
		return i18n.Text{JA: s.Message, EN: s.Message}
	}
	return flowtext.Text(i18n.Msg{Key: s.MessageKey, Args: s.MessageArgs})
}

// evidence is a step's proof, if any: a flowtext message and when.
type evidence struct {
	at  time.Time
	msg i18n.Msg
}

// proof builds the evidence of a step from a flowtext key and its
// arguments given as name, value pairs.
func proof(at time.Time, key string, nameValues ...string) evidence {
	var args i18n.Args
	if len(nameValues) > 0 {
		args = i18n.Args{}
		for i := 0; i+1 < len(nameValues); i += 2 {
			args[nameValues[i]] = nameValues[i+1]
		}
	}
	return evidence{at, i18n.Msg{Key: key, Args: args}}
}

func (e evidence) ok() bool { return e.msg.Key != "" }

// strip turns per-step evidence into steps. A step only counts as done when
// every earlier step is done too: a strip never shows step 5 done and step 3
// open, even if the evidence arrived out of order.
func strip(keys []string, ev []evidence, stuck *Stuck, firstSeen map[int]time.Time) ([]Step, int) {
	steps := make([]Step, len(keys))
	current := 0
	for i, k := range keys {
		steps[i] = Step{N: i + 1, Key: k, Status: StepPending}
		if current == 0 && ev[i].ok() {
			steps[i].Status = StepDone
			steps[i].EvidenceKey = ev[i].msg.Key
			steps[i].EvidenceArgs = ev[i].msg.Args
			steps[i].Evidence = flowtext.English(ev[i].msg)
			steps[i].At = ev[i].at
			if steps[i].At.IsZero() {
				steps[i].At = firstSeen[i+1]
			}
			continue
		}
		if current == 0 {
			current = i + 1
			steps[i].Status = StepCurrent
			if stuck != nil {
				steps[i].Status = StepStuck
			}
		}
	}
	done := len(keys)
	if current != 0 {
		done = current - 1
	}
	return steps, done
}
