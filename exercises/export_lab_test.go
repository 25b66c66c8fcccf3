//go:build !unit

package exercises

import (
	"testing"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// ServedWorld is the package's world (theWorld) for the tests of package
// exercises_test, which put the lab's HTTP API over it: package server
// imports this one, so only an external test can import server. The
// exercise id's cleanup (restore) is registered on t.
func ServedWorld(t *testing.T, id string) (*apptest.Lab, *Service, *controlplane.ControlPlane) {
	t.Helper()
	w := theWorld(t)
	t.Cleanup(func() { w.restore(t, id) })
	return w.lab, w.svc, env.CP
}
