package main

import (
	"os"
	"runtime/debug"
)

// labGCPercent is the lab's GOGC. A lab spends most of its life idle with
// a live heap of about 100 MB (mostly the apiserver's OpenAPI documents
// and routes) and allocates little: at Go's default of 100 the heap is
// let grow to twice that before a collection, which a classroom pays once
// per student. At 50 an idle lab collects a little more often, which costs
// next to nothing at its allocation rate; under load the cost stays
// proportional (no memory limit to thrash against at 1,000 nodes).
const labGCPercent = 50

// tuneGC applies labGCPercent unless the user chose GOGC or GOMEMLIMIT.
func tuneGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(labGCPercent)
	}
}

// settled is called once the lab is ready: start-up (building the
// apiserver's routes and OpenAPI documents, the first lists) allocates
// several times what stays live, and the runtime would hand those pages
// back to the OS only slowly. Returning them now is what makes an idle
// lab's RSS its working set.
func settled() { debug.FreeOSMemory() }
