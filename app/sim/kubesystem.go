package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// kube-system's add-ons as a kubeadm cluster with a CCM has them: CoreDNS
// behind the kube-dns Service and kube-proxy, from kubeadm's manifests
// (k8s.io/kubernetes v1.37.2, cmd/kubeadm/app/phases/addons/dns/manifests.go
// and proxy/manifests.go, names and versions from
// cmd/kubeadm/app/constants), and on the vpc-cni profile the Amazon VPC
// CNI's aws-node DaemonSet (its aws-k8s-cni.yaml). Their Pods are the
// lab's: lab/podruntime's catalogue runs coredns, kube-proxy and
// amazon-k8s-cni, and lab/dataplane sends Pods' DNS queries to a ready
// endpoint of kube-dns, so scaling coredns to 0 breaks names as it
// would on a cluster.
//
// They are created when missing (first start, a student's deletion, an
// exercise reset: RestoreKubeSystem); an object that exists is left as
// it is, so a student's edit lasts until a reset.

const (
	// DNSService is the cluster DNS Service's name (kube-dns, kept for
	// kube-dns compatibility by kubeadm's CoreDNS).
	DNSService = "kube-dns"
	// CoreDNSDeployment is CoreDNS's Deployment name.
	CoreDNSDeployment = kubeadmconstants.CoreDNSDeploymentName
	// KubeProxyDaemonSet is kube-proxy's DaemonSet name.
	KubeProxyDaemonSet = kubeadmconstants.KubeProxy
	// AWSNodeDaemonSet is the Amazon VPC CNI's DaemonSet name.
	AWSNodeDaemonSet = "aws-node"

	// coreDNSReplicas is kubeadm's (phases/addons/dns/dns.go:51).
	coreDNSReplicas = 2
	// kubeadmManager is the field manager of what kubeadm creates (its
	// client's user agent, "kubeadm/<version>").
	kubeadmManager = "kubeadm"
	// cniManager: the VPC CNI is installed from its manifest with
	// `kubectl apply` (a self-managed add-on).
	cniManager = "kubectl-client-side-apply"
	// vpcCNIVersion is the Amazon VPC CNI add-on version EKS lists for
	// Kubernetes 1.28 to 1.34 (docs.aws.amazon.com/eks/latest/userguide/
	// pod-networking.html, "v1.20.4-eksbuild.1").
	vpcCNIVersion = "v1.20.4-eksbuild.1"
	// ecrAccount is the account of EKS's add-on images
	// (602401143452.dkr.ecr.<region>.amazonaws.com/amazon-k8s-cni).
	ecrAccount = "602401143452"
)

// CoreDNSImage is kubeadm's CoreDNS image (cmd/kubeadm/app/images,
// GetDNSImage: registry.k8s.io/coredns/coredns:<CoreDNSVersion>).
func CoreDNSImage() string {
	return "registry.k8s.io/coredns/" + kubeadmconstants.CoreDNSImageName + ":" + kubeadmconstants.CoreDNSVersion
}

// KubeProxyImage is kubeadm's kube-proxy image for the embedded version.
func KubeProxyImage() string {
	return "registry.k8s.io/kube-proxy:" + controlplane.KubernetesVersion()
}

// AWSNodeImage is the VPC CNI's image in region.
func AWSNodeImage(region string) string {
	return ecrAccount + ".dkr.ecr." + region + ".amazonaws.com/amazon-k8s-cni:" + vpcCNIVersion
}

// Corefile is the Corefile kubeadm writes for domain
// (phases/addons/dns/manifests.go, CoreDNSConfigMap).
func Corefile(domain string) string {
	return `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ` + domain + ` in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success ` + domain + `
       disable denial ` + domain + `
    }
    loop
    reload
    loadbalance
}
`
}

// DNSIP is the cluster DNS address for the Service range whose first
// address is kubernetesIP (the "kubernetes" Service's): the range's tenth
// address, as kubeadm's GetDNSIP (constants.go:675) picks it; 10.96.0.10
// for 10.96.0.0/16.
func DNSIP(kubernetesIP string) (string, error) {
	a, err := netip.ParseAddr(kubernetesIP)
	if err != nil || !a.Is4() {
		return "", fmt.Errorf("the kubernetes Service's address %q is not an IPv4 address", kubernetesIP)
	}
	b := a.As4()
	if b[3] > 245 {
		return "", fmt.Errorf("the kubernetes Service's address %s is not the first of its range", kubernetesIP)
	}
	b[3] += 9
	return netip.AddrFrom4(b).String(), nil
}

// kubeSystem are the add-ons' objects for one lab.
type kubeSystem struct {
	serviceAccounts []*v1.ServiceAccount
	clusterRoles    []*rbacv1.ClusterRole
	clusterBindings []*rbacv1.ClusterRoleBinding
	roles           []*rbacv1.Role
	roleBindings    []*rbacv1.RoleBinding
	configMaps      []*v1.ConfigMap
	services        []*v1.Service
	deployments     []*appsv1.Deployment
	daemonSets      []*appsv1.DaemonSet
}

// kubeSystemInput is what the add-ons' objects depend on.
type kubeSystemInput struct {
	profile     profile.Profile
	dnsIP       string
	clusterCIDR string
	apiServer   string // the control plane's endpoint (kube-proxy's kubeconfig)
	region      string
}

func kubeSystemObjects(in kubeSystemInput) kubeSystem {
	var ks kubeSystem
	ks.addCoreDNS(in)
	ks.addKubeProxy(in)
	if in.profile.PodIPsFromVPC {
		ks.addAWSNode(in)
	}
	return ks
}

func sysMeta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: labels}
}

// addCoreDNS: phases/addons/dns/manifests.go, CoreDNSService,
// CoreDNSDeployment, CoreDNSConfigMap and the RBAC after them.
func (ks *kubeSystem) addCoreDNS(in kubeSystemInput) {
	const sa = "coredns"
	appLabels := map[string]string{"k8s-app": "kube-dns"}
	ks.serviceAccounts = append(ks.serviceAccounts, &v1.ServiceAccount{ObjectMeta: sysMeta(sa, nil)})
	ks.clusterRoles = append(ks.clusterRoles, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	})
	ks.clusterBindings = append(ks.clusterBindings, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: metav1.NamespaceSystem}},
	})
	ks.configMaps = append(ks.configMaps, &v1.ConfigMap{
		ObjectMeta: sysMeta(kubeadmconstants.CoreDNSConfigMap, nil),
		Data:       map[string]string{"Corefile": Corefile(dataplane.ClusterDomain)},
	})
	svcMeta := sysMeta(DNSService, map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"})
	svcMeta.Annotations = map[string]string{"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}
	ks.services = append(ks.services, &v1.Service{
		ObjectMeta: svcMeta,
		Spec: v1.ServiceSpec{
			ClusterIP: in.dnsIP,
			Selector:  appLabels,
			Ports: []v1.ServicePort{
				{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	})
	probe := func(path, port string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromString(port), Scheme: v1.URISchemeHTTP}}}
	}
	liveness := probe("/health", "liveness-probe")
	liveness.InitialDelaySeconds, liveness.TimeoutSeconds, liveness.SuccessThreshold, liveness.FailureThreshold = 60, 5, 1, 5
	ks.deployments = append(ks.deployments, &appsv1.Deployment{
		ObjectMeta: sysMeta(CoreDNSDeployment, appLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](coreDNSReplicas),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: appLabels},
				Spec: v1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: sa,
					Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: v1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k8s-app", Operator: metav1.LabelSelectorOpIn, Values: []string{"kube-dns"}}}},
								TopologyKey:   v1.LabelHostname,
							},
						}},
					}},
					// Not the uninitialized taint: CoreDNS waits for the
					// CCM to initialize a node, as on any CCM cluster.
					Tolerations: []v1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: v1.TolerationOpExists},
						{Key: kubeadmconstants.ControlPlaneTaint.Key, Effect: v1.TaintEffectNoSchedule},
					},
					NodeSelector: map[string]string{v1.LabelOSStable: "linux"},
					Containers: []v1.Container{{
						Name:            "coredns",
						Image:           CoreDNSImage(),
						ImagePullPolicy: v1.PullIfNotPresent,
						Resources: v1.ResourceRequirements{
							Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("170Mi")},
							Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("70Mi")},
						},
						Args:         []string{"-conf", "/etc/coredns/Corefile"},
						VolumeMounts: []v1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						Ports: []v1.ContainerPort{
							{ContainerPort: 53, Name: "dns", Protocol: v1.ProtocolUDP},
							{ContainerPort: 53, Name: "dns-tcp", Protocol: v1.ProtocolTCP},
							{ContainerPort: 9153, Name: "metrics", Protocol: v1.ProtocolTCP},
							{ContainerPort: 8080, Name: "liveness-probe", Protocol: v1.ProtocolTCP},
							{ContainerPort: 8181, Name: "readiness-probe", Protocol: v1.ProtocolTCP},
						},
						LivenessProbe:  liveness,
						ReadinessProbe: probe("/ready", "readiness-probe"),
						SecurityContext: &v1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_BIND_SERVICE"}, Drop: []v1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
					}},
					DNSPolicy: v1.DNSDefault,
					Volumes: []v1.Volume{{Name: "config-volume", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
						LocalObjectReference: v1.LocalObjectReference{Name: kubeadmconstants.CoreDNSConfigMap},
						Items:                []v1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
					}}}},
				},
			},
		},
	})
}

// kubeProxyConfig is the part of the KubeProxyConfiguration kubeadm
// writes that says how this kube-proxy runs: mode "" is iptables on
// Linux.
func kubeProxyConfig(clusterCIDR string) string {
	return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
clusterCIDR: ` + clusterCIDR + `
kind: KubeProxyConfiguration
metricsBindAddress: ""
mode: ""
`
}

// addKubeProxy: phases/addons/proxy/manifests.go (KubeProxyConfigMap19,
// KubeProxyDaemonSet19) and proxy.go's RBAC.
func (ks *kubeSystem) addKubeProxy(in kubeSystemInput) {
	const sa = "kube-proxy"
	labels := map[string]string{"k8s-app": KubeProxyDaemonSet}
	ks.serviceAccounts = append(ks.serviceAccounts, &v1.ServiceAccount{ObjectMeta: sysMeta(sa, nil)})
	ks.clusterBindings = append(ks.clusterBindings, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeadmconstants.KubeProxyClusterRoleBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeadmconstants.KubeProxyClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: metav1.NamespaceSystem}},
	})
	ks.roles = append(ks.roles, &rbacv1.Role{
		ObjectMeta: sysMeta("kube-proxy", nil),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kubeadmconstants.KubeProxyConfigMap}, Verbs: []string{"get"}}},
	})
	ks.roleBindings = append(ks.roleBindings, &rbacv1.RoleBinding{
		ObjectMeta: sysMeta("kube-proxy", nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kube-proxy"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}},
	})
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: ` + in.apiServer + `
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token`
	ks.configMaps = append(ks.configMaps, &v1.ConfigMap{
		ObjectMeta: sysMeta(kubeadmconstants.KubeProxyConfigMap, map[string]string{"app": "kube-proxy"}),
		Data:       map[string]string{"kubeconfig.conf": kubeconfig, kubeadmconstants.KubeProxyConfigMapKey: kubeProxyConfig(in.clusterCIDR)},
	})
	ks.daemonSets = append(ks.daemonSets, &appsv1.DaemonSet{
		ObjectMeta: sysMeta(KubeProxyDaemonSet, labels),
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					PriorityClassName: "system-node-critical",
					Containers: []v1.Container{{
						Name:            "kube-proxy",
						Image:           KubeProxyImage(),
						ImagePullPolicy: v1.PullIfNotPresent,
						Command: []string{
							"/usr/local/bin/kube-proxy",
							"--config=/var/lib/kube-proxy/" + kubeadmconstants.KubeProxyConfigMapKey,
							"--hostname-override=$(NODE_NAME)",
						},
						SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)},
						VolumeMounts: []v1.VolumeMount{
							{MountPath: "/var/lib/kube-proxy", Name: "kube-proxy"},
							{MountPath: "/run/xtables.lock", Name: "xtables-lock"},
							{MountPath: "/lib/modules", Name: "lib-modules", ReadOnly: true},
						},
						Env: []v1.EnvVar{{Name: "NODE_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
					}},
					HostNetwork:        true,
					ServiceAccountName: sa,
					Volumes: []v1.Volume{
						{Name: "kube-proxy", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: kubeadmconstants.KubeProxyConfigMap}}}},
						{Name: "xtables-lock", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/run/xtables.lock", Type: ptr.To(v1.HostPathFileOrCreate)}}},
						{Name: "lib-modules", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/lib/modules"}}},
					},
					// Every taint: kube-proxy runs on every node, the
					// uninitialized and the control-plane ones included.
					Tolerations:  []v1.Toleration{{Operator: v1.TolerationOpExists}},
					NodeSelector: map[string]string{v1.LabelOSStable: "linux"},
				},
			},
		},
	})
}

// addAWSNode: the Amazon VPC CNI's aws-k8s-cni.yaml (aws/amazon-vpc-cni-k8s,
// config/master): ServiceAccount, ClusterRole and binding aws-node, and
// the DaemonSet on the host network that tolerates every taint. The lab's
// Pods get VPC addresses from its own IPAM (lab/kubelet); the container
// only shows what runs there.
func (ks *kubeSystem) addAWSNode(in kubeSystemInput) {
	const sa = "aws-node"
	labels := map[string]string{"k8s-app": AWSNodeDaemonSet}
	ks.serviceAccounts = append(ks.serviceAccounts, &v1.ServiceAccount{ObjectMeta: sysMeta(sa, labels)})
	ks.clusterRoles = append(ks.clusterRoles, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-node", Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"crd.k8s.amazonaws.com"}, Resources: []string{"eniconfigs"}, Verbs: []string{"list", "watch", "get"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch", "get"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "get"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch", "get", "update"}},
		},
	})
	ks.clusterBindings = append(ks.clusterBindings, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-node", Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "aws-node"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: metav1.NamespaceSystem}},
	})
	env := func(name, value string) v1.EnvVar { return v1.EnvVar{Name: name, Value: value} }
	ks.daemonSets = append(ks.daemonSets, &appsv1.DaemonSet{
		ObjectMeta: sysMeta(AWSNodeDaemonSet, labels),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("10%"))},
			},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					PriorityClassName: "system-node-critical",
					Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
						NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
							{Key: v1.LabelOSStable, Operator: v1.NodeSelectorOpIn, Values: []string{"linux"}},
							{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
							{Key: "eks.amazonaws.com/compute-type", Operator: v1.NodeSelectorOpNotIn, Values: []string{"fargate"}},
						}}},
					}}},
					ServiceAccountName: sa,
					HostNetwork:        true,
					Tolerations:        []v1.Toleration{{Operator: v1.TolerationOpExists}},
					Containers: []v1.Container{{
						Name:  "aws-node",
						Image: AWSNodeImage(in.region),
						Ports: []v1.ContainerPort{{ContainerPort: 61678, Name: "metrics"}},
						Env: []v1.EnvVar{
							env("ADDITIONAL_ENI_TAGS", "{}"),
							env("AWS_VPC_ENI_MTU", "9001"),
							env("AWS_VPC_K8S_CNI_CONFIGURE_RPFILTER", "false"),
							env("AWS_VPC_K8S_CNI_EXTERNALSNAT", "false"),
							{Name: "MY_NODE_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
						},
						Resources:       v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("25m")}},
						SecurityContext: &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "NET_RAW"}}},
					}},
				},
			},
		},
	})
}

// kubeSystemInput is what this lab's add-ons depend on; the DNS address
// follows the "kubernetes" Service's, which the apiserver creates once it
// runs.
func (s *Sim) kubeSystemInput(ctx context.Context) (kubeSystemInput, error) {
	k, err := s.Client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return kubeSystemInput{}, fmt.Errorf("reading the kubernetes Service: %w", err)
	}
	dnsIP, err := DNSIP(k.Spec.ClusterIP)
	if err != nil {
		return kubeSystemInput{}, err
	}
	return kubeSystemInput{
		profile: s.cfg.Profile, dnsIP: dnsIP, clusterCIDR: s.cfg.ClusterCIDR,
		apiServer: s.cfg.RestConfig.Host, region: s.Cloud.Config().Region,
	}, nil
}

// ensureKubeSystem creates the add-ons' objects that do not exist.
func (s *Sim) ensureKubeSystem(ctx context.Context) error {
	in, err := s.kubeSystemInput(ctx)
	if err != nil {
		return err
	}
	return createMissing(ctx, s.Client, kubeSystemObjects(in))
}

func createMissing(ctx context.Context, c kubernetes.Interface, ks kubeSystem) error {
	ns := metav1.NamespaceSystem
	var errs []error
	// Get before Create: the apiserver checks a Service's ClusterIP
	// before it finds the name taken, so creating kube-dns again fails on
	// its own address rather than as AlreadyExists.
	ensure := func(what, name string, get func() error, create func() error) {
		err := get()
		if apierrors.IsNotFound(err) {
			err = create()
		}
		// Created in between by another writer (a reset racing the lab's
		// own first apply at start): there, as wanted.
		if err != nil && !apierrors.IsAlreadyExists(err) && get() != nil {
			errs = append(errs, fmt.Errorf("creating %s %s: %w", what, name, err))
		}
	}
	get := metav1.GetOptions{}
	for _, o := range ks.serviceAccounts {
		ensure("ServiceAccount", o.Name,
			func() error { _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.clusterRoles {
		ensure("ClusterRole", o.Name,
			func() error { _, err := c.RbacV1().ClusterRoles().Get(ctx, o.Name, get); return err },
			func() error { _, err := c.RbacV1().ClusterRoles().Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.clusterBindings {
		ensure("ClusterRoleBinding", o.Name,
			func() error { _, err := c.RbacV1().ClusterRoleBindings().Get(ctx, o.Name, get); return err },
			func() error {
				_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, o, createOpts(o.Name))
				return err
			})
	}
	for _, o := range ks.roles {
		ensure("Role", o.Name,
			func() error { _, err := c.RbacV1().Roles(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.RbacV1().Roles(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.roleBindings {
		ensure("RoleBinding", o.Name,
			func() error { _, err := c.RbacV1().RoleBindings(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.RbacV1().RoleBindings(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.configMaps {
		ensure("ConfigMap", o.Name,
			func() error { _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.services {
		ensure("Service", o.Name,
			func() error { _, err := c.CoreV1().Services(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.CoreV1().Services(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.deployments {
		ensure("Deployment", o.Name,
			func() error { _, err := c.AppsV1().Deployments(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.AppsV1().Deployments(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	for _, o := range ks.daemonSets {
		ensure("DaemonSet", o.Name,
			func() error { _, err := c.AppsV1().DaemonSets(ns).Get(ctx, o.Name, get); return err },
			func() error { _, err := c.AppsV1().DaemonSets(ns).Create(ctx, o, createOpts(o.Name)); return err })
	}
	return errors.Join(errs...)
}

// createOpts names the field manager a real cluster shows for name's
// object: kubeadm for its add-ons, kubectl for the VPC CNI's manifest.
func createOpts(name string) metav1.CreateOptions {
	if strings.HasPrefix(name, "aws-node") {
		return metav1.CreateOptions{FieldManager: cniManager}
	}
	return metav1.CreateOptions{FieldManager: kubeadmManager}
}

// runKubeSystem applies the add-ons once at start, retrying while the
// apiserver is still bootstrapping (no kubernetes Service, RBAC roles
// not yet there).
// The wait doubles from 1 s to a minute: an add-on that cannot be
// created (its address taken by another Service in a lab that predates
// it) costs a few requests a minute, not twenty a second.
func (s *Sim) runKubeSystem(ctx context.Context) error {
	wait := time.Second
	for {
		err := s.ensureKubeSystem(ctx)
		if err == nil {
			return nil
		}
		// The first miss of the kubernetes Service is the apiserver
		// still bootstrapping, which every start meets: not a warning.
		level := slog.LevelWarn
		if wait == time.Second && apierrors.IsNotFound(err) {
			level = slog.LevelDebug
		}
		s.cfg.Logger.Log(ctx, level, "applying kube-system's add-ons; will retry", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, time.Minute)
	}
}

// RestoreKubeSystem puts kube-system's add-ons back as the lab created
// them where a student took them away: objects deleted are created
// again, and a coredns Deployment scaled to 0 gets kubeadm's 2 replicas
// (without it every name in the next exercise fails). A lab without the
// add-ons (attached to a cluster of its own) has nothing to restore.
func (s *Sim) RestoreKubeSystem(ctx context.Context) error {
	if !s.cfg.ControlPlaneNode {
		return nil
	}
	if err := s.ensureKubeSystem(ctx); err != nil {
		return fmt.Errorf("restoring kube-system's add-ons: %w", err)
	}
	deps := s.Client.AppsV1().Deployments(metav1.NamespaceSystem)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deps.Get(ctx, CoreDNSDeployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
			return nil
		}
		d.Spec.Replicas = ptr.To[int32](coreDNSReplicas)
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{FieldManager: kubeadmManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("scaling coredns back to %d: %w", coreDNSReplicas, err)
	}
	return nil
}
