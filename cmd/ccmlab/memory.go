package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/ccmlab/ccmlab/internal/gctune"
)

// tuneGC sets the lab's idle GOGC (internal/gctune) now and returns what
// to call once the lab is ready: give start-up's garbage back, then run the
// tuner (GOGC 100 while busy, 50 while idle) until ctx ends. Start-up
// itself runs at the idle target, as it always did: at 100 it leaves a
// heap spread over more pages, about 10 MB more RSS once idle. GOGC or
// GOMEMLIMIT in the environment win over all of it.
func tuneGC(ctx context.Context, logger *slog.Logger) (ready func(), err error) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
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
