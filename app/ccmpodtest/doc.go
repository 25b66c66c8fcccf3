// Package ccmpodtest tests the CCM as the Pod a real cluster runs: the
// DaemonSet the lab applies, its Pod placed by the scheduler on the
// control-plane node, the embedded CCM running exactly while that Pod
// runs (with its arguments, its ServiceAccount and the Lease upstream
// uses), and the page's switches rolling it. It starts a lab like
// `ccmlab serve` on the package's control plane (cptest).
package ccmpodtest
