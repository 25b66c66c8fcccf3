package labapi

import (
	"encoding/json"
	"time"
)

// The live stream's envelope and the message types a follower of the
// stream (the classroom's dashboard) reads. server/hub numbers and fans
// out the envelopes; server/stream defines every message's data, these
// among them.

// Message is the envelope of every WebSocket text message sent to browsers.
type Message struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"` // e.g. "snapshot", "object", "call", "controllers", "flow", "trace", "bye", "resync"
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Message types a follower reads. server/stream lists them all.
const (
	TypeSnapshot    = "snapshot"
	TypeBye         = "bye"
	TypeResync      = "resync"
	TypeServiceFlow = "serviceflow"
	TypeNodeFlow    = "nodeflow"
	TypeExercise    = "exercise"
)

// Change is a Kubernetes-side object (or a flow derived from them) that
// appeared, changed or went away: one type per kind, so each message says
// what its data is.
type Change[T any] struct {
	// Kind repeats the envelope's type.
	Kind string `json:"type"`
	Op   string `json:"op"`
	Key  string `json:"key"`
	// Data is the whole new object; absent on delete.
	Data *T `json:"data,omitempty"`
}

// Type is the envelope type the change travels under.
func (c Change[T]) Type() string { return c.Kind }

// The flow changes, one per envelope type.
type (
	ServiceFlowChange = Change[ServiceFlow]
	NodeFlowChange    = Change[NodeFlow]
)

// Exercise says an exercise was checked, reset or answered: its progress
// may have changed. Followers (the classroom's dashboard) re-read
// GET /api/exercises rather than polling it.
type Exercise struct {
	Exercise string `json:"exercise"`
}

// Type is TypeExercise.
func (Exercise) Type() string { return TypeExercise }
