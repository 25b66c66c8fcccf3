// Package controlplane runs a real Kubernetes control plane inside the ccmlab
// process: embedded etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler from k8s.io/kubernetes, all on loopback.
//
// The components are started through their app packages' lower-level entry
// points rather than their cobra commands, because each cobra command installs
// a process-wide signal handler that panics when installed twice. Each
// component still takes the same flags a real deployment would; the flags are
// listed in one place per component so a student can compare them with the
// chapter (for example --cloud-provider=external on the controller-manager).
//
// Everything lives under Config.DataDir: etcd's data, the PKI and the admin
// kubeconfig. Ports are chosen free at start so that several labs (and test
// packages) run side by side.
//
// Every address the apiserver dials that a user can write (kubelets,
// webhooks, APIServices) goes through its egress selector and an HTTP
// CONNECT proxy on loopback (egress.go) that dials only the lab's own
// addresses; the kubelets' dialer is the lab's. etcdspace.go keeps a full
// disk or a full etcd an answer rather than an exit. klog is
// captured into the static Pods' logs by caller package (logs.go, etcd's
// zap lines in etcdlog.go), and StaticPods returns the components'
// manifests for the control-plane node's mirror Pods (mirrorpods.go).
//
// Note that several Kubernetes packages register process-wide state (metrics,
// configz); a process can start one control plane. Tests start it once per
// package in TestMain.
package controlplane
