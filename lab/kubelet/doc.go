// Package kubelet runs ccmlab's simulated kubelets: one per running cloud
// instance, each behaving, as far as the apiserver can tell, like a kubelet
// started with --cloud-provider=external. That is the starting point of the
// chapter's node initialization: the kubelet registers a Node that carries
// the node.cloudprovider.kubernetes.io/uninitialized taint and has no
// providerID and no addresses, and only the CCM's Node controller can finish
// the job. Without one the Node is Ready but nothing schedules onto it.
//
// What each kubelet does:
//
//   - registers its Node (named after the instance's private DNS name, as
//     on AWS), or adopts the existing one after a restart without tainting
//     it again;
//   - renews its Lease in kube-node-lease every HeartbeatInterval and writes
//     its conditions when they change or every NodeStatusInterval;
//   - reports bound Pods as Running and Ready with an IP from the node's
//     podCIDR (or from the VPC with the vpc-cni profile), and completes
//     the deletion of Pods being deleted, since it has no containers to
//     stop;
//   - records the kubelet's Pulling, Pulled, Created and Started events when
//     a Pod first runs (events.go);
//   - on the control-plane instance (tagged ControlPlaneTag), registers a
//     control-plane node and keeps a mirror Pod per static Pod manifest
//     (staticpods.go);
//   - serves the kubelet API's containerLogs over TLS from a certificate
//     signed by the lab's CA, reached through DialNode, which the
//     apiserver's egress proxy calls (server.go);
//   - stops dead when its instance stops or is terminated, so that the real
//     node-lifecycle controller in the controller-manager is the one to
//     notice, exactly as with a VM that lost power.
//
// The Manager follows the cloud through Snapshot and Subscribe rather than
// through API calls, so the kubelets never show up in the students' call
// log. All kubelets share one Pod and one Node informer and one Pod work
// queue; per node there is only a goroutine that heartbeats, with a random
// phase and jitter so that 1,000 nodes do not write in lockstep.
//
// Pod IPs are kept unique per pool (per node, or one for the VPC) and
// re-read from the apiserver on start, so a restarted lab never hands out
// an address twice.
package kubelet
