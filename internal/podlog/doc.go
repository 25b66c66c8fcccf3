// Package podlog keeps the lab's container logs: one bounded buffer of
// timestamped lines per container, which the simulated kubelets serve to
// `kubectl logs` (tail, since, follow) the way a real kubelet serves the
// files the container runtime writes.
//
// Producers append whole lines under a key they agree on with the kubelet
// (for example "kube-system/cloud-controller-manager" for a static Pod's
// container, "<pod UID>/<container>" for an app Pod's). A buffer keeps at
// most its byte limit and drops its oldest lines first, so memory stays
// bounded however long a lab runs; nothing is allocated for a key until its
// first line.
//
// End closes a buffer's followers (a deleted Pod ends `kubectl logs -f`);
// Remove also drops its lines.
package podlog
