package cloud

import (
	"testing"

	"go.uber.org/goleak"
)

// The cloud runs goroutines of its own (the state writer, held and delayed
// calls, step mode): a test that ends with one still running fails here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
