//go:build !unit

package lbctest

import (
	"testing"

	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// env is the one control plane this package's tests share.
var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }
