package exercises

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The mystery's API without a control plane: what it shows before a
// cause is named, and bad input that changes nothing.
func TestMysteryAPI(t *testing.T) {
	env := fakeEnv(t, "aws", fakeControllers{"node": true, "nodelifecycle": true, "route": true, "service": true})
	s, err := New(Config{Env: env, Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := s.Get(ctx, MysteryID, "ja")
	if err != nil {
		t.Fatal(err)
	}
	if d.MysteryView == nil || d.Service != "default/shop" || len(d.Causes) < 6 {
		t.Fatalf("detail = %+v", d.MysteryView)
	}
	for _, c := range d.Causes {
		if c.ID == "" || c.Label.JA == "" || c.Label.EN == "" {
			t.Errorf("cause %+v lacks an id or a label", c)
		}
	}
	for _, want := range []string{CauseNoServiceController, CauseClassUnhandled, CauseIAMDeny, CauseThrottling, CauseNodesExcluded, CauseNoInitializedNode} {
		if !slices.Contains(CauseIDs(), want) {
			t.Errorf("cause %s missing", want)
		}
	}
	// Nothing in the JSON says which cause is hidden before it is named.
	b, _ := json.Marshal(d)
	for _, field := range []string{`"cause":`, `"why":`, `"answer":`, `"correct":`} {
		if strings.Contains(string(b), field) {
			t.Errorf("detail before naming carries %s: %s", field, b)
		}
	}
	// Other exercises carry no mystery fields.
	other, _ := s.Get(ctx, "node-init", "en")
	if b, _ := json.Marshal(other); strings.Contains(string(b), `"causes"`) {
		t.Errorf("node-init carries causes: %s", b)
	}

	before := env.Cloud.Faults()
	for _, tc := range []struct {
		name string
		err  func() error
		want error
		msg  string
	}{
		{"unknown cause", func() error { return s.ResetWith(ctx, MysteryID, ResetOptions{Cause: "gremlins"}) }, ErrBadInput, "valid: no-service-controller"},
		{"cause for another exercise", func() error { return s.ResetWith(ctx, "node-init", ResetOptions{Cause: CauseIAMDeny}) }, ErrBadInput, "takes no cause"},
		{"cause for no exercise", func() error { return s.ResetWith(ctx, "nope", ResetOptions{Cause: CauseIAMDeny}) }, ErrNotFound, "nope"},
		{"naming before a reset", func() error { _, err := s.NameCause(ctx, MysteryID, CauseIAMDeny, "en"); return err }, ErrUnavailable, "reset"},
		{"naming an unknown cause", func() error { _, err := s.NameCause(ctx, MysteryID, "gremlins", "en"); return err }, ErrBadInput, "unknown cause"},
		{"naming on another exercise", func() error { _, err := s.NameCause(ctx, "node-init", CauseIAMDeny, "en"); return err }, ErrBadInput, "no cause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
		})
	}
	if after := env.Cloud.Faults(); !slices.Equal(after.Deny, before.Deny) || after.QPS != before.QPS {
		t.Errorf("bad input changed the faults: %+v -> %+v", before, after)
	}
	if _, ok, _ := s.cfg.Store.Started(ctx, MysteryID); ok {
		t.Error("bad input started the exercise")
	}
	if l := env.Cloud.Snapshot().Instances; len(l) != 0 {
		t.Errorf("bad input launched instances: %v", l)
	}
}

// TestMysteryFirstAnswerIsFinal: "only the first answer counts", as the
// exercise says: the first cause named ends the diagnosis, right or
// wrong, shows the hidden cause, and a later answer (even the right one)
// is refused until a reset.
func TestMysteryFirstAnswerIsFinal(t *testing.T) {
	env := fakeEnv(t, "aws", fakeControllers{"node": true, "nodelifecycle": true, "route": true, "service": true})
	s, err := New(Config{Env: env, Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := CauseIDs()
	// Hide ids[0] as a reset would.
	if _, err := s.cfg.Store.RecordAnswer(ctx, hiddenKey, rowHiddenCause, 0, false, s.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		first, then string
		correct     bool
	}{
		{"wrong first, then right", ids[1], ids[0], false},
		{"right first, then wrong", ids[0], ids[1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.cfg.Store.Restart(ctx, MysteryID, s.cfg.Now()); err != nil {
				t.Fatal(err)
			}
			v, err := s.NameCause(ctx, MysteryID, tc.first, "en")
			if err != nil {
				t.Fatal(err)
			}
			if !v.Named || v.Correct == nil || *v.Correct != tc.correct || v.Answer != tc.first || v.Cause != ids[0] || v.Why == "" {
				t.Errorf("after the first answer: %+v", v)
			}
			if _, err := s.NameCause(ctx, MysteryID, tc.then, "en"); !errors.Is(err, ErrNotCurrent) || !strings.Contains(err.Error(), "only the first answer counts") {
				t.Errorf("a second answer: %v, want ErrNotCurrent", err)
			}
			v, err = s.Mystery(ctx, "en")
			if err != nil {
				t.Fatal(err)
			}
			if *v.Correct != tc.correct || v.Answer != tc.first {
				t.Errorf("the second answer changed the verdict: %+v", v)
			}
			named, correct, err := s.CauseNamed(ctx)
			if err != nil || !named || correct != tc.correct {
				t.Errorf("CauseNamed = %v, %v, %v; want true, %v", named, correct, err, tc.correct)
			}
		})
	}
}
