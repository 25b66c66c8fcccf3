package classroom

import (
	"context"
)

// Backend runs the students' labs; the portal only proxies to them, follows
// their streams and sends them the dashboard's actions.
type Backend interface {
	// Prepare does what must succeed before the portal says it is ready
	// (the kubernetes backend creates every student's objects here).
	Prepare(ctx context.Context) error
	// Run supervises the labs until ctx ends.
	Run(ctx context.Context) error
	// Visit records a student's request to their lab; the returned func
	// ends it.
	Visit(name string) func()
	// Ensure returns the address (host:port) of the student's lab, waiting
	// until it is ready (and starting it, if the backend starts labs on
	// demand).
	Ensure(ctx context.Context, name string) (string, error)
	// Status is the lab's state (stopped, starting, ready, stopping) and,
	// when ready, its address.
	Status(name string) (state, addr string)
}

// Backends a class can run on.
const (
	BackendLocal      = "local"
	BackendKubernetes = "kubernetes"
)

// Prepare has nothing to do for local labs: they start on demand.
func (b *localBackend) Prepare(context.Context) error { return nil }
