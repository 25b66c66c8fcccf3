package flow

import (
	"time"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

// A flow's steps, their status and why one is stuck are wire types of
// the stream, defined in internal/labapi so that the classroom reads them
// without linking the flow.
type (
	StepStatus = labapi.StepStatus
	Step       = labapi.Step
	Stuck      = labapi.Stuck
)

const (
	StepDone    = labapi.StepDone
	StepCurrent = labapi.StepCurrent
	StepStuck   = labapi.StepStuck
	StepPending = labapi.StepPending
)

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

// newStuck builds a Stuck from a reason code and a flowtext message.
func newStuck(reason, key string, args i18n.Args) *Stuck {
	m := i18n.Msg{Key: key, Args: args}
	return &Stuck{Reason: reason, Message: flowtext.English(m), MessageKey: key, MessageArgs: args}
}

// StuckText is the stuck detail in both languages.
func StuckText(s *Stuck) i18n.Text {
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
