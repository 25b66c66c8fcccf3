package hub

import (
	"testing"

	"go.uber.org/goleak"
)

// The hub runs a goroutine per websocket client and its keepalives: a test
// that ends with one still running fails here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
