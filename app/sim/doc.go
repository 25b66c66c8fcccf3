// Package sim assembles the simulated side of the lab around a Kubernetes
// API: the cloud and its first instances, the simulated kubelets that turn
// instances into Nodes, the embedded CCM that drives the cloud, the data
// plane that serves the load balancers, and the flow observer that derives
// the steps the page shows, wired to one another.
//
// It is the part of the composition root (package app) that the
// integration tests of lab/flow and exercises need without the HTTP side,
// and sits below exercises so exercises' own tests can use it (see
// app/apptest). Start is the start sequence both the binary and the tests
// run (the AWS API on the cloud, the upstream provider's tripwire, the
// kubelets' dialer, the caches), so the tests exercise the binary's
// wiring. It starts no goroutine of its own: Go adds its parts to the
// caller's errgroup, so a process has one supervisor.
package sim
