//go:build !unit

package kubevirttest

import (
	"testing"

	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// env is the one control plane this package's tests share, with the
// management side the kubevirt profile needs.
var env *cptest.Env

func TestMain(m *testing.M) {
	cptest.Main(m, &env, func(c *controlplane.Config) { c.Infra = true })
}
