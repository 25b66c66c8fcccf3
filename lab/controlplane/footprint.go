package controlplane

// The embedded control plane runs what kubeadm v1.37.2 runs: every API
// group version kube-apiserver serves by default (no --runtime-config),
// every admission plugin it enables by default plus kubeadm's
// NodeRestriction, the Node and RBAC authorizers, every
// kube-controller-manager controller that is on by default plus kubeadm's
// bootstrapsigner and tokencleaner, each controller with its own
// ServiceAccount's credentials, and the garbage collector and watch caches
// at upstream's defaults. The flags are kubeadm's
// (cmd/kubeadm/app/phases/controlplane/manifests.go, getAPIServerCommand
// and getControllerManagerCommand); a manifest from any tutorial finds
// what a kubeadm cluster has.
//
// What the lab still sets differently is listed here with the reason; none
// of it switches off an API, a plugin or a controller a kubeadm cluster has.

// kubeadmAdmission is kubeadm's --enable-admission-plugins
// (manifests.go:188). Every plugin outside upstream's
// DefaultOffAdmissionPlugins (pkg/kubeapiserver/options/plugins.go:164) is
// on as well, Pod Security included; its default level is privileged, so it
// refuses nothing until a namespace opts in with a label.
const kubeadmAdmission = "NodeRestriction"

// kubeadmAuthorization is kubeadm's default --authorization-mode
// (manifests.go:277, getAuthzModes). The lab's own clients, its kubelets
// among them, are in system:masters (pki.go), which the apiserver lets
// through before either mode is asked (pkg/kubeapiserver/authorizer/
// reload.go:111); the Node authorizer and NodeRestriction judge only a
// client that authenticates as a node (system:node:<name>).
const kubeadmAuthorization = "Node,RBAC"

// kubeadmControllers is kubeadm's --controllers (manifests.go:362): every
// controller upstream enables by default, and the two it leaves off
// (ControllersDisabledByDefault, cmd/kube-controller-manager/app/
// controller_descriptor.go:121) that serve bootstrap tokens. The
// selinux-warning-controller stays off, as in kubeadm. With
// --cloud-provider=external the cloud controllers (service-lb, node-route,
// cloud-node-lifecycle) start nothing: they belong to the CCM.
const kubeadmControllers = "*,bootstrapsigner,tokencleaner"

// Leader election stays off for the controller-manager and the scheduler
// (kubeadm: --leader-elect=true, manifests.go:351 and :398). A lab has one
// replica of each, so an election decides nothing; what it would cost is
// time: the controller-manager does not give its Lease back on exit
// (ReleaseOnCancel follows the alpha, default-off feature gate
// ControllerManagerReleaseLeaderElectionLockOnExit, k8s.io/controller-manager
// pkg/features/kube_features.go:63), so a lab restarted on its data dir
// (the page's restart, `ccmlab serve` again) would run no controller until
// the previous process's Lease expired (15 s, LeaseDuration's default).
const leaderElect = "false"
