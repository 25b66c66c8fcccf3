// Package cloud is ccmlab's simulated cloud: the provider on the other side of
// the cloud-controller-manager.
//
// It is shaped like AWS because the chapter the lab teaches speaks AWS:
// instances ("i-" + 17 hex digits) placed in the zones of one region with
// private IPs from a VPC, load balancers with DNS names (or IPs), listeners,
// targets and health checks, and a route table of podCIDR -> instance rows.
// The real k8s.io/cloud-provider controllers reach it through an adapter in
// controllers/; the simulated kubelets and the web UI call it directly.
//
// Every API call goes through one pipeline so that students can see, and
// instructors can bend, what a cloud does to a controller:
//
//	record start -> step-mode hold -> latency -> IAM deny -> rate limit ->
//	injected failure -> validate input -> mutate -> record the outcome
//
// Every outcome, including denials, throttling and bad input, is written to
// the call log (the lab's CloudTrail) and pushed to subscribers. Bad input
// never changes state. Who made a call travels in the context (WithCaller) so
// method signatures stay like an SDK's.
//
// State (instances, load balancers, routes) can be persisted to a JSON file so
// that it survives a restart; faults and step mode deliberately do not, so a
// restarted lab never starts out broken.
//
// A Cloud is safe for concurrent use. The only Kubernetes import is
// k8s.io/utils/clock, so tests can drive latency and rate limits with a fake
// clock.
package cloud
