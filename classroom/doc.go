// Package classroom runs a class: one portal that gives every student their
// own lab behind /s/<name>/ (each with its own token) and the instructor a
// live dashboard of everyone's exercise progress, with actions on all or
// some of the labs.
//
// The portal never runs a lab itself: a Backend does. The local backend
// runs each lab as a "ccmlab serve" child process on a loopback port with
// its own data dir under <data-dir>/students/<name>, starts it on the
// student's first visit (or ahead, for --prestart and the warm pool), stops
// it when idle and restarts it when it dies; a lab's data dir outlives its
// process, so a restarted lab has the student's objects and exercise
// progress. The kubernetes backend applies, through client-go, a Deployment
// of one Pod, a Secret, a PVC (or emptyDir) and a Service per student in a
// namespace, all at start, follows the Pods to know which labs are ready,
// and reaches each lab at its Service; DeleteClass removes a class by its
// labels.
//
// Progress is live, not polled: the portal follows each running lab's
// websocket stream (/ws) and re-reads the lab's GET /api/exercises when the
// lab announces an "exercise" message (or sends a snapshot, on connect),
// keeps the lab's stuck flows from its snapshot and nodeflow/serviceflow
// messages, then pushes the class to dashboards over server-sent events.
// Every call to a lab goes through labclient, in the lab's own Go types.
//
// Files: portal.go (routes, tokens, the proxy to each lab), progress.go
// (the class's progress, fed by the labs' streams), classview.go (the
// dashboard's reads), actions.go and challenge.go (the dashboard's
// actions), local.go and kube.go (the backends).
package classroom
