package hub

import "testing"

// After a server restart seqs start again at 1; a client resuming with an
// epoch from another run must get a snapshot, never another run's replay.
func TestEpochMismatchGetsSnapshot(t *testing.T) {
	ts := newTestServer(t, Config{Epoch: "run-2"}, nil)
	for i := 0; i < 5; i++ {
		mustPublish(t, ts.hub, TypeObject, i)
	}
	tests := []struct {
		name, query, wantType string
	}{
		{"same epoch replays", "since=2&epoch=run-2", TypeObject},
		{"other epoch gets snapshot", "since=2&epoch=run-1", TypeSnapshot},
		{"no epoch gets snapshot", "since=2", TypeSnapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, ts.wsURL(tt.query), nil)
			if m := mustRead(t, c); m.Type != tt.wantType || (tt.wantType == TypeObject && m.Seq != 3) {
				t.Fatalf("first message = %s seq %d, want %s", m.Type, m.Seq, tt.wantType)
			}
		})
	}
}
