// Package app is the lab's composition root: from one Config it builds the
// whole lab — the cluster (the embedded control plane, or an existing
// cluster it attaches to), the simulated cloud and its first instances,
// the kubelets, the CCM, the data plane and the flow observer (package
// app/sim), the exercises with their progress store and console, the
// websocket hub and the typed stream of changes into it, and the HTTP
// handler — and runs it under one errgroup.
//
// cmd/ccmlab parses flags into a Config, serves Handler and calls Run;
// the integration tests assemble the same parts through app/sim and
// app/apptest.
package app
