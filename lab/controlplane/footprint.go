package controlplane

import "strings"

// What the embedded control plane leaves out, and why. A classroom runs one
// lab per student on one machine, so every API group, admission plugin and
// controller the lab never exercises is memory and CPU paid 30 times over.
// Each cut was measured on an idle 3-node lab (docs/footprint.md); each
// keeps every exercise, the chapter's kubectl commands, `kubectl logs` and
// the garbage collector working.

// kcmControllers are the kube-controller-manager controllers the lab runs
// (--controllers lists them, so every other one is off). A Deployment
// needs deployment, replicaset, the scheduler and garbage-collector;
// a Service needs endpoints and endpointslice; Pods need the namespace's
// default ServiceAccount (serviceaccount) because the ServiceAccount
// admission plugin insists on one; node-ipam hands out the podCIDRs the
// Route controller routes; node-lifecycle marks a stopped node NotReady and
// taint-eviction and pod-garbage-collector act on what it finds; the two
// protection controllers remove the finalizers the StorageObjectInUse
// admission plugin puts on PVCs and PVs, or deleting one would hang.
//
// Left out, among others: resourcequota (it rediscovers every resource and
// watches them all), the certificate, bootstrap-token and legacy token
// controllers (no kubelet here asks for a certificate or a token), the
// volume binder and attach/detach (no storage), the job, cronjob,
// statefulset, HPA and disruption controllers (no exercise uses them), resourceclaim (fifty idle workers) and the
// validating-admission-policy status controller (8 MB of OpenAPI schemas).
var kcmControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"deployment-controller",
	"replicaset-controller",
	// The cloud-controller-manager runs as a DaemonSet on the
	// control-plane node, as upstream's example manifest runs it.
	"daemonset-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"node-ipam-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// disabledAPIs are group versions the apiserver does not serve
// (--runtime-config). Each served resource costs a watch cache, an etcd
// watch and its OpenAPI schema. None of these is used by an exercise, the
// lab's components or the controllers above. Kept on purpose: storage,
// policy, resource and scheduling (the scheduler's plugins list them),
// networking (the apiserver allocates ClusterIPs through ServiceCIDR and
// IPAddress objects), admissionregistration (the webhook and policy admission plugins read it), flowcontrol, rbac, coordination, events, discovery.
var disabledAPIs = []string{
	"autoscaling/v1",
	"autoscaling/v2",
	"batch/v1",
	"certificates.k8s.io/v1",
	"node.k8s.io/v1",
	"storagemigration.k8s.io/v1",
}

// disabledAdmission are default-on admission plugins the lab turns off
// (--disable-admission-plugins). They guard objects the lab has no use for
// (quotas, limit ranges, runtime classes, certificates, ingress classes,
// storage classes, Pod Security labels); MutatingAdmissionPolicy keeps
// informers and a CEL compiler for objects no lab creates. The webhook
// plugins and ValidatingAdmissionPolicy are on: a student's webhooks are
// called, through the lab's one dialer (egress.go), and a policy is
// enforced as upstream's would be.
var disabledAdmission = []string{
	"LimitRanger",
	"ResourceQuota",
	"MutatingAdmissionPolicy",
	"RuntimeClass",
	"CertificateApproval",
	"CertificateSigning",
	"ClusterTrustBundleAttest",
	"CertificateSubjectRestriction",
	"DefaultIngressClass",
	"DefaultStorageClass",
	"PersistentVolumeClaimResize",
	"PodSecurity",
}

func runtimeConfig() string {
	parts := make([]string, len(disabledAPIs))
	for i, gv := range disabledAPIs {
		parts[i] = gv + "=false"
	}
	return strings.Join(parts, ",")
}

// gcIgnored are resources the garbage collector does not follow. It would
// otherwise keep a full informer (and a graph node per object) for every
// resource the apiserver serves: all of RBAC's bootstrap roles, the flow
// control objects, the storage and DRA types the scheduler merely lists.
// No lab object of these kinds has an owner to be collected with; the
// collector keeps following Pods, ReplicaSets, Deployments, Services,
// EndpointSlices, Nodes, Leases, ConfigMaps, Secrets, ServiceAccounts,
// PVCs and Namespaces, which is where the lab's ownerReferences are.
var gcIgnored = []struct{ group, resource string }{
	{"", "events"}, // upstream's default
	{"events.k8s.io", "events"},
	{"", "podtemplates"},
	{"", "limitranges"},
	{"", "resourcequotas"},
	{"", "replicationcontrollers"},
	{"", "persistentvolumes"},
	{"apps", "controllerrevisions"},
	{"apps", "statefulsets"},
	{"apps", "daemonsets"},
	{"rbac.authorization.k8s.io", "roles"},
	{"rbac.authorization.k8s.io", "rolebindings"},
	{"rbac.authorization.k8s.io", "clusterroles"},
	{"rbac.authorization.k8s.io", "clusterrolebindings"},
	{"flowcontrol.apiserver.k8s.io", "flowschemas"},
	{"flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"},
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
	{"admissionregistration.k8s.io", "validatingwebhookconfigurations"},
	{"admissionregistration.k8s.io", "validatingadmissionpolicies"},
	{"admissionregistration.k8s.io", "validatingadmissionpolicybindings"},
	{"admissionregistration.k8s.io", "mutatingadmissionpolicies"},
	{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings"},
	{"apiextensions.k8s.io", "customresourcedefinitions"},
	{"apiregistration.k8s.io", "apiservices"},
	{"storage.k8s.io", "csidrivers"},
	{"storage.k8s.io", "csinodes"},
	{"storage.k8s.io", "csistoragecapacities"},
	{"storage.k8s.io", "storageclasses"},
	{"storage.k8s.io", "volumeattachments"},
	{"storage.k8s.io", "volumeattributesclasses"},
	{"resource.k8s.io", "deviceclasses"},
	{"resource.k8s.io", "resourceclaims"},
	{"resource.k8s.io", "resourceclaimtemplates"},
	{"resource.k8s.io", "resourceslices"},
	{"resource.k8s.io", "devicetaintrules"},
	{"scheduling.k8s.io", "priorityclasses"},
	{"networking.k8s.io", "ingresses"},
	{"networking.k8s.io", "ingressclasses"},
	{"networking.k8s.io", "networkpolicies"},
	{"networking.k8s.io", "ipaddresses"},
	{"networking.k8s.io", "servicecidrs"},
	{"policy", "poddisruptionbudgets"},
}

// uncached are resources the apiserver serves without a watch cache
// (--watch-cache-sizes=<resource>#0): each cache is a copy of every object,
// a ring of recent events, an etcd watch and about ten goroutines, one of
// which wakes every second to send bookmarks. These have one watcher or
// none (the scheduler's or the apiserver's own informer), a handful of
// objects, and change only when someone edits them; their reads go to
// etcd instead. Everything the lab's flows touch keeps its cache (Nodes,
// Pods, Services, EndpointSlices, Leases, Events, namespaces, the
// apiserver's ClusterIP allocator's ServiceCIDRs and IPAddresses...).
var uncached = []string{
	"clusterroles.rbac.authorization.k8s.io",
	"clusterrolebindings.rbac.authorization.k8s.io",
	"roles.rbac.authorization.k8s.io",
	"rolebindings.rbac.authorization.k8s.io",
	"flowschemas.flowcontrol.apiserver.k8s.io",
	"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
	"mutatingwebhookconfigurations.admissionregistration.k8s.io",
	"validatingwebhookconfigurations.admissionregistration.k8s.io",
	"validatingadmissionpolicies.admissionregistration.k8s.io",
	"validatingadmissionpolicybindings.admissionregistration.k8s.io",
	"mutatingadmissionpolicies.admissionregistration.k8s.io",
	"mutatingadmissionpolicybindings.admissionregistration.k8s.io",
	"priorityclasses.scheduling.k8s.io",
	"poddisruptionbudgets.policy",
	"storageclasses.storage.k8s.io",
	"csinodes.storage.k8s.io",
	"csidrivers.storage.k8s.io",
	"csistoragecapacities.storage.k8s.io",
	"volumeattachments.storage.k8s.io",
	"volumeattributesclasses.storage.k8s.io",
	"resourceclaims.resource.k8s.io",
	"resourceclaimtemplates.resource.k8s.io",
	"resourceslices.resource.k8s.io",
	"deviceclasses.resource.k8s.io",
	"devicetaintrules.resource.k8s.io",
	"ingresses.networking.k8s.io",
	"ingressclasses.networking.k8s.io",
	"networkpolicies.networking.k8s.io",
	"limitranges",
	"resourcequotas",
	"podtemplates",
	"replicationcontrollers",
	"persistentvolumes",
	"statefulsets.apps",
	"daemonsets.apps",
	"controllerrevisions.apps",
}

func watchCacheSizes() string {
	parts := make([]string, len(uncached))
	for i, r := range uncached {
		parts[i] = r + "#0"
	}
	return strings.Join(parts, ",")
}
