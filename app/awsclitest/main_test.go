//go:build !unit

package awsclitest

import (
	"testing"

	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// One real control plane for the package, and one lab on it.
var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }
