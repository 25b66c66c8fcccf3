package check

import (
	"context"
	"errors"

	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Controllers is the CCM manager as the checks see it (*controllers.Manager
// satisfies it).
type Controllers interface {
	Status() map[string]bool
	Enable(name string) error
	Disable(name string) error
}

// Dataplane is the lab's network (*dataplane.Dataplane satisfies it).
// Checks never send requests (a check that did would count its own
// traffic): they read the traces of the requests students sent, which
// the history keeps with their origin.
type Dataplane interface {
	Traces() []dataplane.Trace
}

// Flows is the part of *flow.Observer the checks read.
type Flows interface {
	ServiceFlow(key string) (flow.ServiceFlow, bool)
	NodeFlow(name string) (flow.NodeFlow, bool)
}

// CauseNamer says whether the student has named mystery-pending's right
// cause (wrong answers do not count) and whether at the first try
// (*exercises.Service satisfies it).
type CauseNamer interface {
	CauseNamed(ctx context.Context) (named, correct bool, err error)
}

// Env is the running lab a check is evaluated against. Every field is
// required but Causes.
type Env struct {
	Client      kubernetes.Interface
	Cloud       *cloud.Cloud
	Flow        Flows
	Controllers Controllers
	Dataplane   Dataplane
	Profile     profile.Profile
	// Causes answers the check causeNamed; the exercises service sets it.
	Causes CauseNamer
	// History is what happened, with who did it: the evidence kinds read
	// it from Input.Since on.
	History *history.Recorder
	// Infra is the kubevirt profile's management cluster (VMIs, the CCM's
	// Deployment and Lease), nil in a lab without one; the kinds of
	// checks_kubevirt.go read it.
	Infra kubernetes.Interface
}

// Validate says which required fields are missing.
func (e Env) Validate() error {
	var errs []error
	if e.Client == nil {
		errs = append(errs, errors.New("Env.Client is required"))
	}
	if e.Cloud == nil {
		errs = append(errs, errors.New("Env.Cloud is required"))
	}
	if e.Flow == nil {
		errs = append(errs, errors.New("Env.Flow is required"))
	}
	if e.Controllers == nil {
		errs = append(errs, errors.New("Env.Controllers is required"))
	}
	if e.Dataplane == nil {
		errs = append(errs, errors.New("Env.Dataplane is required"))
	}
	if e.History == nil {
		errs = append(errs, errors.New("Env.History is required"))
	}
	if e.Profile.Name == "" {
		errs = append(errs, errors.New("Env.Profile is required"))
	}
	return errors.Join(errs...)
}
