package datafs

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// Writer writes whole files into the data dir.
type Writer interface {
	// WriteFileAtomic replaces path with what write produces, so that a
	// crash or a failed write leaves either the old or the new file, never
	// half of one.
	WriteFileAtomic(path string, write func(io.Writer) error) error
}

// IsFull reports whether err says the disk (or the user's quota) is full.
// Stores that learn it another way (SQLite's SQLITE_FULL) wrap
// syscall.ENOSPC so that this one check covers them too.
func IsFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// OS writes to the real filesystem.
type OS struct{}

// WriteFileAtomic writes a temporary file beside path, syncs it and
// renames it over path. It streams through a buffer rather than building
// the whole document in memory first.
func (OS) WriteFileAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename itself durable where supported
		d.Close()
	}
	return nil
}

// Switch is a Writer for tests: while SetFull(true) holds, every write
// fails with ENOSPC as on a full disk and leaves the file as it was;
// otherwise it writes through to OS. The zero value writes through.
type Switch struct {
	full   atomic.Bool
	failed atomic.Int64
}

// SetFull makes the disk full (true) or frees it (false).
func (s *Switch) SetFull(full bool) { s.full.Store(full) }

// Failed counts the writes refused so far, so a test can wait until a
// background writer has met the full disk.
func (s *Switch) Failed() int64 { return s.failed.Load() }

// WriteFileAtomic implements Writer.
func (s *Switch) WriteFileAtomic(path string, write func(io.Writer) error) error {
	if s.full.Load() {
		s.failed.Add(1)
		return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	return OS{}.WriteFileAtomic(path, write)
}
