// Package check is the exercises' checker: the named check kinds
// (nodesInitialized, podsPending, serviceExternalIP, objectChange,
// eventSeen, request, routeForEveryNode, nodeDeleted, ...), the
// parameters each takes, the answer kinds a step can ask the student to
// type, and their evaluation against the running lab through Env: the
// apiserver, the simulated cloud, the flows, the controller switches and
// the lab's history. Every verdict is written in Japanese and English.
//
// State kinds look at the lab as it is. Evidence kinds (evidence.go) read
// the history (lab/history) after Input.Since, the moment the previous
// step passed: who changed which object, which cloud calls were made,
// which switches moved, which requests a student sent. No check sends a
// request itself. ValidateAll refuses a step that has neither an
// evidence kind nor an answer, since it could pass without the student
// doing anything.
//
// The files are split by what a check looks at: checks.go holds the table
// of kinds, Validate, Evaluate and shared helpers; checks_nodes.go nodes
// and pods; checks_services.go Services, their events and flows;
// checks_cloud.go the cloud side (switches, IAM, load balancers, routes);
// evidence.go the history; answers.go the typed answers; checks_extra.go
// the place for kinds added later.
//
// The check specs themselves are package format's type; format validates
// a file's structure and Validate here the kinds and their parameters.
// Every kind is table-tested, passing and failing, against a fake
// clientset, a real in-memory cloud and a history: no control plane
// needed.
package check
