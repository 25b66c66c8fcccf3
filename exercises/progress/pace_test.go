package progress

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The classroom pace outlives a reopening of the store (a restart of the
// lab), and nil forgets it.
func TestPaceSurvivesReopening(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "progress.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Pace(ctx); err != nil || ok {
		t.Fatalf("a new store has a pace: %v %v", ok, err)
	}
	want := Pace{Set: time.Second, Before: 150 * time.Millisecond}
	if err := s.SetPace(ctx, &want); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPace(ctx, &want); err != nil { // again: replaced, not doubled
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok, err := s.Pace(ctx); err != nil || !ok || got != want {
		t.Fatalf("after reopening: %+v %v %v, want %+v", got, ok, err, want)
	}
	if err := s.SetPace(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Pace(ctx); err != nil || ok {
		t.Fatalf("after forgetting: %+v %v %v", got, ok, err)
	}
	if seed, err := s.Seed(ctx); err != nil || seed == 0 {
		t.Fatalf("the meta table's seed: %d %v", seed, err)
	}
}
