package datafs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestIsFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ENOSPC", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{"EDQUOT wrapped", fmt.Errorf("save: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}), true},
		{"EACCES", &os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, false},
		{"plain", errors.New("disk full"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsFull(tc.err); got != tc.want {
				t.Errorf("IsFull(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestSwitch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	var s Switch
	write := func(v string) error {
		return s.WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, v); return err })
	}
	if err := write("one"); err != nil {
		t.Fatal(err)
	}
	s.SetFull(true)
	if err := write("two"); !IsFull(err) {
		t.Fatalf("write on a full disk: %v, want ENOSPC", err)
	}
	if s.Failed() != 1 {
		t.Errorf("Failed() = %d, want 1", s.Failed())
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("file after a refused write = %q, want the old %q", b, "one")
	}
	s.SetFull(false)
	if err := write("three"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Errorf("file = %q, want %q", b, "three")
	}
}
