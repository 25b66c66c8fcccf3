package sim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/kubevirt"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The kubevirt profile's management side. The chapter's tenant cluster
// has its kubevirt-cloud-controller-manager "on the management-cluster
// side", with load balancing off: here a Deployment in the tenant's
// namespace of the management apiserver (Config.Infra), configured by a
// ConfigMap (the cloud config) and a Secret (the tenant's kubeconfig), as
// Cluster API's KubeVirt provider deploys it. The tenant sees no CCM Pod,
// no CCM Lease and no CCM event; its Nodes are named as Cluster API names
// Machines and have one VMI each (lab/kubevirt's Mirror).
//
// The management side has no controller-manager, scheduler or kubelet of
// its own: the lab plays them for this one Deployment (runInfraCCM). It
// runs one CCM process with the Deployment's container arguments for as
// long as the Deployment exists, a new one whenever they change (the
// page's switches edit them), and writes the Deployment's status.

const (
	// InfraCCMName is the CCM Deployment's (and its ServiceAccount's) name
	// in the management cluster.
	InfraCCMName = "kubevirt-cloud-controller-manager"
	// infraCloudConfigPath and infraKubeconfigPath are where the
	// Deployment mounts its ConfigMap and Secret.
	infraCloudConfigPath = "/etc/cloud/cloud-config"
	infraKubeconfigPath  = "/etc/kubernetes/kubeconfig/value"
)

// isKubevirt: the simulation has a management side.
func (s *Sim) isKubevirt() bool { return s.cfg.Profile.Name == "kubevirt" && s.cfg.Infra != nil }

// KubevirtCluster is the tenant cluster's name (and its namespace in the
// management cluster).
func (s *Sim) KubevirtCluster() string { return kubevirt.ClusterName(s.Cloud.Config().ClusterID) }

// kubevirtHostName names the lab's VMs as Cluster API names the tenant's
// Machines.
func kubevirtHostName(clusterID string) func(id string, tags map[string]string) string {
	cluster := kubevirt.ClusterName(clusterID)
	return func(id string, tags map[string]string) string {
		_, cp := tags[kubelet.ControlPlaneTag]
		return kubevirt.NodeName(cluster, id, cp)
	}
}

// kubevirtCloudConfig is the CCM's cloud config: the management
// namespace, instances from VMIs, no zones and regions, no load balancer.
func kubevirtCloudConfig(ns string) string {
	return "kubeconfig: " + infraKubeconfigPath + "\n" +
		"namespace: " + ns + "\n" +
		"loadBalancer:\n  enabled: false\n" +
		"instancesV2:\n  enabled: true\n  zoneAndRegionEnabled: false\n"
}

// kubevirtArgs is the CCM container's command line.
func kubevirtArgs(p profile.Profile, cluster string, on map[string]bool) []string {
	return []string{
		"--v=2",
		"--cloud-provider=kubevirt",
		"--cloud-config=" + infraCloudConfigPath,
		"--kubeconfig=" + infraKubeconfigPath,
		"--controllers=" + controllers.ControllersFlag(p, on),
		"--cluster-name=" + cluster,
		"--leader-elect=true",
		"--leader-elect-resource-namespace=" + cluster,
	}
}

// splitFileArgs takes the two file flags off args: the lab reads the
// mounted ConfigMap and Secret itself, at exactly those paths.
func splitFileArgs(args []string) (rest []string, err error) {
	for _, a := range args {
		switch {
		case a == "--cloud-config="+infraCloudConfigPath, a == "--kubeconfig="+infraKubeconfigPath:
		case strings.HasPrefix(a, "--cloud-config"), strings.HasPrefix(a, "--kubeconfig"):
			return nil, fmt.Errorf("%s: the Deployment mounts its cloud config at %s and the tenant's kubeconfig at %s only", a, infraCloudConfigPath, infraKubeconfigPath)
		default:
			rest = append(rest, a)
		}
	}
	return rest, nil
}

// kubevirtUpstream builds the provider of each controller instance: the
// cloud config from the ConfigMap, VMIs from the management apiserver.
func (s *Sim) kubevirtUpstream(caller string, _ kubernetes.Interface, _ informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
	ns := s.KubevirtCluster()
	kc, err := kubernetes.NewForConfig(s.cfg.Infra)
	if err != nil {
		return nil, err
	}
	cm, err := kc.CoreV1().ConfigMaps(ns).Get(context.Background(), InfraCCMName+"-config", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the cloud config: %w", err)
	}
	cc, err := provider.ParseKubevirtCloudConfig(strings.NewReader(cm.Data["cloud-config"]))
	if err != nil {
		return nil, err
	}
	ic := rest.CopyConfig(s.cfg.Infra)
	ic.UserAgent = "kubevirt-cloud-controller-manager/" + caller
	dyn, err := dynamic.NewForConfig(ic)
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return provider.NewKubevirt(cc, dyn, life), nil
}

// ensureInfraCCMObjects creates the CCM's objects in the management
// cluster that do not exist.
func (s *Sim) ensureInfraCCMObjects(ctx context.Context, c kubernetes.Interface) error {
	ns := s.KubevirtCluster()
	on := map[string]bool{}
	for _, n := range s.cfg.Controllers {
		on[n] = true
	}
	tenant, err := tenantKubeconfig(s.cfg.RestConfig)
	if err != nil {
		return err
	}
	labels := map[string]string{"app": InfraCCMName}
	create := []func() error{
		func() error {
			_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: InfraCCMName, Namespace: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: InfraCCMName, Namespace: ns},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstances"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
					{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: InfraCCMName, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: InfraCCMName},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: InfraCCMName, Namespace: ns}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: InfraCCMName + "-config", Namespace: ns},
				Data:       map[string]string{"cloud-config": kubevirtCloudConfig(ns)},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: ns + "-kubeconfig", Namespace: ns},
				Data:       map[string][]byte{"value": tenant},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: InfraCCMName, Namespace: ns, Labels: labels},
				Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: v1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: v1.PodSpec{
							ServiceAccountName: InfraCCMName,
							Containers: []v1.Container{{
								Name: InfraCCMName, Image: ccmImageRepo + ":kubevirt",
								Command: []string{"/bin/kubevirt-cloud-controller-manager"},
								Args:    kubevirtArgs(s.cfg.Profile, ns, on),
								VolumeMounts: []v1.VolumeMount{
									{Name: "cloud-config", MountPath: "/etc/cloud", ReadOnly: true},
									{Name: "kubeconfig", MountPath: "/etc/kubernetes/kubeconfig", ReadOnly: true},
								},
							}},
							Volumes: []v1.Volume{
								{Name: "cloud-config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: InfraCCMName + "-config"}}}},
								{Name: "kubeconfig", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: ns + "-kubeconfig"}}},
							},
						},
					},
				},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, f := range create {
		if err := f(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the management side's CCM objects: %w", err)
		}
	}
	return nil
}

// tenantKubeconfig is the kubeconfig the CCM reaches the tenant with (the
// lab's component identity, as Cluster API hands the provider the
// tenant's admin kubeconfig).
func tenantKubeconfig(rc *rest.Config) ([]byte, error) {
	ca := rc.TLSClientConfig.CAData
	if len(ca) == 0 && rc.TLSClientConfig.CAFile != "" {
		b, err := os.ReadFile(rc.TLSClientConfig.CAFile)
		if err != nil {
			return nil, err
		}
		ca = b
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["tenant"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["tenant-admin"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	cfg.Contexts["tenant"] = &clientcmdapi.Context{Cluster: "tenant", AuthInfo: "tenant-admin"}
	cfg.CurrentContext = "tenant"
	return clientcmd.Write(*cfg)
}

// runInfraCCM applies the objects, then runs the Deployment's CCM.
func (s *Sim) runInfraCCM(ctx context.Context) error {
	c, err := kubernetes.NewForConfig(s.cfg.Infra)
	if err != nil {
		return err
	}
	for {
		err := s.ensureInfraCCMObjects(ctx, c)
		if err == nil {
			err = s.ensureInfraNodes(ctx, c) // kubevirtpod.go
		}
		if err == nil {
			break
		}
		s.cfg.Logger.Warn("applying the management side's CCM; will retry", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	close(s.ccmApplied)
	ns := s.KubevirtCluster()
	var (
		running []string
		stop    context.CancelFunc
		wg      sync.WaitGroup
	)
	defer func() {
		if stop != nil {
			stop()
		}
		wg.Wait()
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		d, err := c.AppsV1().Deployments(ns).Get(ctx, InfraCCMName, metav1.GetOptions{})
		var want []string
		if err == nil && len(d.Spec.Template.Spec.Containers) > 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas > 0) {
			want = d.Spec.Template.Spec.Containers[0].Args
		}
		if !slices.Equal(want, running) || (want != nil && stop == nil) {
			if stop != nil {
				stop()
				wg.Wait()
				stop = nil
			}
			running = want
			if want != nil {
				// Its Pod first: the process's hostname is the Pod's name
				// (kubevirtpod.go).
				pod, perr := s.ensureCCMPod(ctx, c, d)
				if perr != nil {
					s.cfg.Logger.Warn("the management side's CCM Pod; will retry", "err", perr)
					running = nil
				} else {
					pctx, cancel := context.WithCancel(ctx)
					stop = cancel
					wg.Go(func() {
						if err := s.runInfraProcess(pctx, want, pod); err != nil && pctx.Err() == nil {
							s.cfg.Logger.Warn("the management side's CCM exited", "err", err)
						}
					})
				}
			} else if err == nil {
				// Scaled to zero: its Pods go.
				if derr := s.deleteOldCCMPods(ctx, c, d, ""); derr != nil && ctx.Err() == nil {
					s.cfg.Logger.Warn("deleting the management side's CCM Pods", "err", derr)
				}
			}
		}
		if err == nil {
			s.writeInfraCCMStatus(ctx, c, d, want != nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// runInfraProcess runs the CCM with the Deployment's arguments as its Pod
// (hostname) would.
func (s *Sim) runInfraProcess(ctx context.Context, args []string, hostname string) error {
	rest0, err := splitFileArgs(args)
	if err != nil {
		return err
	}
	parsed, err := controllers.ParseArgs(rest0, s.cfg.Profile)
	if err != nil {
		return err
	}
	tenant := rest.CopyConfig(s.cfg.RestConfig)
	return s.Manager.RunProcess(ctx, controllers.Process{
		Args:        parsed,
		Hostname:    hostname,
		Config:      func(string) (*rest.Config, error) { return rest.CopyConfig(tenant), nil },
		LeaseConfig: s.cfg.Infra,
	})
}

// writeInfraCCMStatus reports the one replica as the Deployment
// controller would.
func (s *Sim) writeInfraCCMStatus(ctx context.Context, c kubernetes.Interface, d *appsv1.Deployment, up bool) {
	var n int32
	if up {
		n = 1
	}
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	if d.Status.ObservedGeneration == st.ObservedGeneration && d.Status.Replicas == n && d.Status.ReadyReplicas == n && d.Status.AvailableReplicas == n {
		return
	}
	d = d.DeepCopy()
	d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = st.ObservedGeneration, n, n
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
	if _, err := c.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
		s.cfg.Logger.Warn("writing the management CCM's status", "err", err)
	}
}

// switchInfraCCM is the kubevirt Manager's Switch: it rewrites
// --controllers in the management side's Deployment.
func (s *Sim) switchInfraCCM(ctx context.Context, name string, on bool) error {
	select {
	case <-s.ccmApplied:
	case <-ctx.Done():
		return ctx.Err()
	}
	c, err := kubernetes.NewForConfig(s.cfg.Infra)
	if err != nil {
		return err
	}
	ns := s.KubevirtCluster()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.AppsV1().Deployments(ns).Get(ctx, InfraCCMName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: the Deployment %s/%s of the management cluster is gone, so no CCM runs", controllers.ErrBusy, ns, InfraCCMName)
		}
		if err != nil {
			return err
		}
		ct := &d.Spec.Template.Spec.Containers[0]
		rest0, err := splitFileArgs(ct.Args)
		if err != nil {
			return fmt.Errorf("%w: %v", controllers.ErrBusy, err)
		}
		args, err := controllers.SwitchArgs(rest0, s.cfg.Profile, name, on)
		if err != nil {
			return fmt.Errorf("%w: %v", controllers.ErrBusy, err)
		}
		args = slices.Insert(args, min(2, len(args)), "--cloud-config="+infraCloudConfigPath, "--kubeconfig="+infraKubeconfigPath)
		if slices.Equal(args, ct.Args) {
			return nil
		}
		ct.Args = args
		_, err = c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "ccmlab"})
		return err
	})
}

// runVMIs keeps one VMI per VM.
func (s *Sim) runVMIs(ctx context.Context) error {
	m, err := kubevirt.NewMirror(kubevirt.MirrorConfig{Cloud: s.Cloud, Infra: s.cfg.Infra, Namespace: s.KubevirtCluster(), Logger: s.cfg.Logger.With("component", "kubevirt")})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}
