package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/internal/datafs"
)

// A full data-dir disk must not take the lab down. A request whose write
// met it is answered 507 {"error": "data dir full: DIR"} (the errorHandler
// recognises the error with datafs.IsFull, wherever it came from: the
// cloud's state file, the progress database); the lab keeps running,
// /healthz answers 200 "degraded: data dir full: DIR" and the page shows a
// banner. It recovers by itself: while degraded, each health check probes
// the data dir with a small write, and the cloud's writer retries on its
// own (cloud.SaveError).

// probeName is the file the probe writes (and removes) in the data dir.
const probeName = ".ccmlab-space-probe"

// diskWatch remembers that a request met a full disk.
type diskWatch struct {
	full  atomic.Bool // set by a 507, cleared by a successful probe
	probe sync.Mutex  // one probe at a time
}

func (s *Server) dataDirFullMsg() string {
	dir := s.cfg.DataDir
	if dir == "" {
		dir = "(unknown)"
	}
	return "data dir full: " + dir
}

// diskFullError is the 507 for err when err says the disk is full, nil
// otherwise.
func (s *Server) diskFullError(c echo.Context, err error) *echo.HTTPError {
	if !datafs.IsFull(err) {
		return nil
	}
	if !s.disk.full.Swap(true) {
		s.cfg.Logger.Error("the data dir's disk is full; the lab goes on, but refuses what it cannot save",
			"dir", s.cfg.DataDir, "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	return echo.NewHTTPError(http.StatusInsufficientStorage, s.dataDirFullMsg())
}

// degraded says why the lab is degraded ("" when it is not).
func (s *Server) degraded() string {
	if s.disk.full.Load() && !s.probeDataDir() {
		return s.dataDirFullMsg()
	}
	if l := s.lab.Load(); l != nil && l.Cloud != nil && datafs.IsFull(l.Cloud.SaveError()) {
		return s.dataDirFullMsg()
	}
	return ""
}

// probeDataDir tries a small write into the data dir and, when it
// succeeds, forgets that the disk was full. Without a DataDir there is
// nothing to probe and the flag stays.
func (s *Server) probeDataDir() bool {
	if s.cfg.DataDir == "" {
		return false
	}
	s.disk.probe.Lock()
	defer s.disk.probe.Unlock()
	if !s.disk.full.Load() {
		return true // another probe just succeeded
	}
	path := filepath.Join(s.cfg.DataDir, probeName)
	err := s.cfg.Files.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "ccmlab checks that the data dir has room again\n")
		return err
	})
	if err != nil {
		return false
	}
	_ = os.Remove(path)
	s.disk.full.Store(false)
	s.cfg.Logger.Info("the data dir's disk has room again", "dir", s.cfg.DataDir)
	return true
}
