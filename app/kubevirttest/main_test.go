//go:build !unit

package kubevirttest

import (
	"sync"
	"testing"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// env is the one control plane this package's tests share, with the
// management side the kubevirt profile needs.
var env *cptest.Env

func TestMain(m *testing.M) {
	cptest.Main(m, &env, func(c *controlplane.Config) { c.Infra = true })
}

// servedNodes is the workers of the served lab (--nodes 2).
const servedNodes = 2

var (
	labOnce sync.Once
	shared  *apptest.Lab
	labErr  error
)

// servedLab is the one lab `ccmlab serve --profile kubevirt --nodes 2`
// builds, shared by the package's tests (two labs on one control plane
// would fight over its Nodes).
func servedLab(t *testing.T) *apptest.Lab {
	t.Helper()
	cptest.Need(t)
	labOnce.Do(func() {
		p, err := profile.Get("kubevirt")
		if err != nil {
			labErr = err
			return
		}
		served := sim.DefaultLab()
		served.Profile, served.AWSProvider = p, sim.AWSProviderLab
		served.Controllers, _ = p.ParseControllers("")
		served.Nodes = servedNodes
		shared, labErr = apptest.Serve(env, served)
	})
	if labErr != nil {
		t.Fatal(labErr)
	}
	return shared
}
