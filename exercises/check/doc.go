// Package check is the exercises' checker: the named check kinds
// (nodesInitialized, podsPending, serviceExternalIP, serviceEvents,
// extraHop, routeForEveryNode, nodeDeleted, ...), the parameters each
// takes, and their evaluation against the running lab through Env: the
// apiserver, the simulated cloud, the flows, the controller switches and
// the data plane. Checks that prove traffic flows send their own requests
// through the data plane. Every verdict is written in Japanese and
// English.
//
// The files are split by what a check looks at: checks.go holds the table
// of kinds, Validate, Evaluate and shared helpers; checks_nodes.go nodes
// and pods; checks_services.go Services, their events and flows;
// checks_cloud.go the cloud side (switches, IAM, load balancers, routes).
//
// The check specs themselves are package format's type; format validates
// a file's structure and Validate here the kinds and their parameters.
// Every kind is table-tested, passing and failing, against a fake
// clientset and a real in-memory cloud: no control plane needed.
package check
