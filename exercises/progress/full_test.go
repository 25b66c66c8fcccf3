package progress

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/datafs"
)

// TestFullDisk fills the database the way a full disk does for SQLite
// (max_page_count makes it answer SQLITE_FULL, as it does on ENOSPC): every
// kind of write fails with an error datafs.IsFull recognises, what was
// recorded before is still there, the refused write left nothing behind,
// and writes succeed again once there is room.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	t0 := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	if err := s.Restart(ctx, "no-ccm", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAttempt(ctx, "no-ccm", "kept", true, t0); err != nil {
		t.Fatal(err)
	}
	setMaxPages := func(n int64) {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n)); err != nil {
			t.Fatal(err)
		}
	}
	var pages int64
	if err := s.db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	setMaxPages(pages)
	// Fill what room the last pages have left, until SQLite says full.
	filled := false
	for i := range 10000 {
		if _, err := s.RecordStepAnswer(ctx, "filler", fmt.Sprintf("step-%05d", i), fmt.Sprintf("%0200d", i), false, t0); err != nil {
			if !datafs.IsFull(err) {
				t.Fatalf("write %d on a full database: %v, want a full disk's error", i, err)
			}
			filled = true
			break
		}
	}
	if !filled {
		t.Fatal("the database never filled up")
	}

	long := fmt.Sprintf("%02000d", 0) // bigger than any page's room
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"RecordAttempt", func() error { _, err := s.RecordAttempt(ctx, "no-ccm-"+long, "refused", true, t0); return err }},
		{"RecordAnswer", func() error { _, err := s.RecordAnswer(ctx, "review", long, 1, true, t0); return err }},
		{"RecordStepAnswer", func() error { _, err := s.RecordStepAnswer(ctx, "no-ccm", "refused", long, true, t0); return err }},
		{"Restart", func() error { return s.Restart(ctx, "exercise-"+long, t0) }},
		{"BeginReset", func() error { return s.BeginReset(ctx, "exercise-"+long, []string{"no-ccm-" + long}, long, t0) }},
		{"FailReset", func() error { return s.FailReset(ctx, "exercise-"+long, nil, "{}", long, t0) }},
		{"EndReset resumed", func() error { return s.EndReset(ctx, "exercise-"+long, ResetResumed, long, t0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); !datafs.IsFull(err) {
				t.Fatalf("%s on a full database: %v, want a full disk's error", tc.name, err)
			}
		})
	}
	steps, err := s.Steps(ctx, "no-ccm")
	if err != nil {
		t.Fatalf("reading on a full database: %v", err)
	}
	if !steps["kept"].Passed() {
		t.Errorf("a step recorded before the disk filled up is gone: %+v", steps)
	}
	typed, err := s.StepAnswers(ctx, "no-ccm")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := typed["refused"]; ok {
		t.Error("a refused write was recorded")
	}

	setMaxPages(1 << 30) // space freed
	if _, err := s.RecordStepAnswer(ctx, "no-ccm", "after", "v", true, t0); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	if typed, _ := s.StepAnswers(ctx, "no-ccm"); !typed["after"].Correct {
		t.Errorf("write after space was freed is missing: %+v", typed)
	}
}
