// Package clustertest holds the integration tests of the control plane as
// a student's manifests meet it, on the lab `ccmlab serve` builds: every
// API group and controller a kubeadm cluster has (Jobs, CronJobs,
// ReplicationControllers, StatefulSets, HPAs, the root CA ConfigMap in
// every namespace, Pod Security) and the field managers a real cluster
// records (kube-controller-manager, kube-scheduler).
package clustertest
