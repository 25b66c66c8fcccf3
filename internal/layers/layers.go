package layers

import "strings"

// Module is this module's path; the rules below are relative to it.
const Module = "github.com/ccmlab/ccmlab"

// Layers lists the module's packages from the bottom up: a package may
// import packages of its own layer or of one listed before it. A pattern
// is a package path relative to the module; "x/..." stands for x and every
// package below it. When several patterns match a package, the longest
// one places it.
var Layers = [][]string{
	{"internal/...", "internal/labapi"},
	{"lab/profile", "lab/ccmnames", "lab/flow/flowtext", "lab/dataplane/tracetext"},
	{"lab/cloud", "lab/controlplane"},
	{"lab/kubelet", "lab/dataplane", "lab/controlplane/cptest", "lab/awsapi/...", "lab/kubevirt"},
	{"lab/flow", "lab/history", "lab/flow/upstreamflow", "lab/podruntime", "lab/dataplane/outside"},
	{"lab/dataplane/lowports"},
	{"controllers/..."},
	{"app/sim"},
	{"exercises/format"},
	{"exercises/..."},
	{"server/stream", "server/hub", "web"},
	{"server", "server/replay"},
	{"app/..."},
	{"classroom/..."},
	{"cmd/..."},
	// Upstream's e2e suite, run against a lab from outside: it imports
	// nothing of the lab's.
	{"conformance"},
}

// Forbidden lists imports that no package under a prefix may have, whatever
// the layers say: they are the rules the layers exist for, kept readable.
var Forbidden = map[string][]string{
	"lab/...":      {"controllers/...", "server/...", "web/...", "exercises/...", "app/..."},
	"internal/...": {"lab/...", "controllers/...", "server/...", "web/...", "exercises/...", "app/...", "cmd/..."},
	// An exercise check looks at the lab, never at the CCM's code: the
	// names it looks for are lab/ccmnames's.
	"exercises/...": {"controllers/..."},
}

// Leaves are packages that may import no module package but the ones
// listed. internal/labapi is the wire types of the lab's HTTP API and
// stream that the classroom portal reads: it stays a leaf so the portal
// links none of the lab.
var Leaves = map[string][]string{
	"internal/labapi": {"internal/i18n"},
}

// Unreachable lists packages that no package under a prefix may reach,
// directly or through others. The classroom talks to labs only over HTTP,
// in internal/labapi's types: linking the lab would pull in the cloud,
// the control plane and kubectl (some 2,000 packages) for a few types.
var Unreachable = map[string][]string{
	"classroom/...": {"lab/...", "exercises/...", "server/...", "controllers/...", "app/..."},
}

// Match reports whether the module-relative package path rel matches
// pattern, and how specific the match is (the pattern's length).
func Match(pattern, rel string) (bool, int) {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		if rel == base || strings.HasPrefix(rel, base+"/") {
			return true, len(pattern)
		}
		return false, 0
	}
	return rel == pattern, len(pattern)
}

// LayerOf returns the index in Layers of the layer rel belongs to, or -1
// when no pattern matches it.
func LayerOf(rel string) int {
	best, bestLen := -1, -1
	for i, layer := range Layers {
		for _, p := range layer {
			if ok, n := Match(p, rel); ok && n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best
}
