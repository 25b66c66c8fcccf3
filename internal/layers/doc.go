// Package layers writes down, once and in code, how the packages of this
// module stack up, and its test fails when a package imports one above it.
//
// From the bottom:
//
//	internal/...                  shared primitives; import nothing of ours but other internal packages
//	lab/profile                   the cloud profiles
//	lab/cloud, lab/controlplane   the simulated cloud; the embedded control plane
//	lab/kubelet, lab/dataplane    what runs on the simulated nodes (and cptest, the control plane for tests)
//	lab/flow                      the steps derived from both sides
//	controllers/...               the embedded CCM over lab/cloud
//	app/sim                       the simulated side assembled (below exercises, whose tests use it)
//	exercises/format              the exercise files: types, parsing, structure
//	exercises/...                 the checker (imports format), progress, console, the service
//	server/stream, server/hub, web  the stream's types, the websocket hub, the page
//	server                        the HTTP API
//	app, app/...                  the composition root
//	cmd/...                       the binaries
//
// A package may import packages of its own layer or below. In particular
// no lab/<name> package imports controllers, server, web or exercises: the
// lab is what the CCM runs against, not the other way round.
//
// Only non-test files count. Tests may import any layer, because they use
// the real assembly (app/apptest builds a lab for exercises' and lab/flow's
// tests, for instance). A package that no rule names fails the test: add
// it to Layers in layers.go, at the layer its imports put it.
package layers
