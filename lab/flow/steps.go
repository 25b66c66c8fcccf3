package flow

import "time"

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
	// Evidence names what proved the step, e.g. "event EnsuringLoadBalancer"
	// or "call CreateLoadBalancer by service-controller".
	Evidence string `json:"evidence,omitempty"`
}

// Reason codes for a step that cannot happen. The page translates the code
// and shows Message (English, with the specifics) beside it.
const (
	ReasonNoServiceController = "no-service-controller"
	ReasonClassUnhandled      = "class-unhandled"
	ReasonCloudError          = "cloud-error"
	ReasonNoEligibleNodes     = "no-eligible-nodes"
	ReasonNoNodeController    = "no-node-controller"
	ReasonInstanceNotRunning  = "instance-not-running"
	ReasonNoEndpoints         = "no-endpoints"
)

// Stuck says why the current step cannot happen.
type Stuck struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// evidence is a step's proof, if any.
type evidence struct {
	at   time.Time
	what string
}

func (e evidence) ok() bool { return e.what != "" }

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
			steps[i].Evidence = ev[i].what
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
