// Package world assembles the simulated world around a Kubernetes API: the
// cloud's instances become Nodes through the simulated kubelets, the
// embedded CCM drives the cloud, the data plane serves the load balancers,
// and the flow observer derives the steps the page shows.
//
// It exists so that the binary (cmd/ccmlab) and the integration tests of
// lab/flow and exercises put the pieces together the same way; the binary
// adds the websocket hub, the exercises and the HTTP server on top.
package world
