package stream

import (
	"testing"

	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/server/hub"
)

// TestFlowTypesAreLabAPIs: the envelope types a follower of the stream
// reads in internal/labapi's names (the classroom) are the ones the lab
// sends: the flow observer's kinds, the hub's own types and this
// package's.
func TestFlowTypesAreLabAPIs(t *testing.T) {
	for _, tc := range []struct{ name, sent, read string }{
		{"serviceflow", string(flow.KindServiceFlow), labapi.TypeServiceFlow},
		{"nodeflow", string(flow.KindNodeFlow), labapi.TypeNodeFlow},
		{"snapshot", hub.TypeSnapshot, labapi.TypeSnapshot},
		{"bye", hub.TypeBye, labapi.TypeBye},
		{"resync", hub.TypeResync, labapi.TypeResync},
		{"exercise", Exercise{}.Type(), labapi.TypeExercise},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sent != tc.read {
				t.Errorf("the lab sends %q, a follower reads %q", tc.sent, tc.read)
			}
		})
	}
}
