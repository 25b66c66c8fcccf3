// Package podstest holds the integration tests of Pods that run (the
// lab's container runtime, lab/podruntime, in the simulated kubelets) on
// the lab `ccmlab serve` builds, driven with the system's kubectl as a
// student drives it.
package podstest
