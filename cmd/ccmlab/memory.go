package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"syscall"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ccmlab/ccmlab/app"
	"github.com/ccmlab/ccmlab/internal/gctune"
)

// limitsRuntime is what applyLimits changes in the process; tests give it
// fakes, the lab processLimits.
type limitsRuntime struct {
	getenv         func(string) string
	setMemoryLimit func(int64) int64
	getrlimit      func(resource int, rlim *syscall.Rlimit) error
	setrlimit      func(resource int, rlim *syscall.Rlimit) error
}

func processLimits() limitsRuntime {
	return limitsRuntime{getenv: os.Getenv, setMemoryLimit: debug.SetMemoryLimit, getrlimit: syscall.Getrlimit, setrlimit: syscall.Setrlimit}
}

// applyLimits gives the process cfg's limits and says what they are, for
// the start-up output. The memory limit is the runtime's soft limit: near
// it the collector runs more often, whatever GOGC the tuner set (the two
// cooperate: GOGC paces collection below the limit, the limit caps the
// heap's growth), so a runaway lab burns its own CPU before the machine's
// memory. GOMEMLIMIT in the environment wins, as the runtime has already
// applied it. The open-files limit is set soft and hard: lowering both
// needs no privilege, and the lab cannot raise it again.
func applyLimits(cfg app.Config, rt limitsRuntime) (string, error) {
	var mem string
	switch env := rt.getenv("GOMEMLIMIT"); {
	case env != "":
		mem = "memory " + env + " (GOMEMLIMIT)"
	case cfg.MemoryLimit > 0:
		rt.setMemoryLimit(cfg.MemoryLimit)
		mem = "memory " + resource.NewQuantity(cfg.MemoryLimit, resource.BinarySI).String() + " (Go soft limit)"
	default:
		mem = "memory unlimited"
	}
	var lim syscall.Rlimit
	if err := rt.getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", fmt.Errorf("reading the open-files limit: %w", err)
	}
	if n := uint64(cfg.MaxOpenFiles); n > 0 {
		if n > lim.Max {
			return "", fmt.Errorf("--max-open-files %d: above this process's hard limit of %d, which only root raises", n, lim.Max)
		}
		lim = syscall.Rlimit{Cur: n, Max: n}
		if err := rt.setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return "", fmt.Errorf("--max-open-files %d: %w", n, err)
		}
	}
	return fmt.Sprintf("%s, %d open files", mem, lim.Cur), nil
}

// tuneGC sets the lab's idle GOGC (internal/gctune) now and returns what
// to call once the lab is ready: give start-up's garbage back, then run the
// tuner (GOGC 100 while busy, 50 while idle) until ctx ends. Start-up
// itself runs at the idle target, as it always did: at 100 it leaves a
// heap spread over more pages, about 10 MB more RSS once idle. GOGC in the
// environment wins over all of it; a memory limit (applyLimits) does not
// stop the tuner: it only caps what the GOGC targets let the heap become.
func tuneGC(ctx context.Context, logger *slog.Logger) (ready func(), err error) {
	if os.Getenv("GOGC") != "" {
		return settled, nil
	}
	t, err := gctune.New(gctune.Config{Logger: logger})
	if err != nil {
		return nil, err
	}
	return func() {
		settled()
		t.Run(ctx)
	}, nil
}

// settled is called once the lab is ready: start-up (building the
// apiserver's routes and OpenAPI documents, the first lists) allocates
// several times what stays live, and the runtime would hand those pages
// back to the OS only slowly. Returning them now is what makes an idle
// lab's RSS its working set.
func settled() { debug.FreeOSMemory() }
