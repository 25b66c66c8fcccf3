package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The CCM as the Pod a cluster that runs cloud-provider-aws runs: a
// DaemonSet on the control-plane node, shaped like upstream's example
// manifest (examples/existing-cluster of kubernetes/cloud-provider-aws),
// with its ServiceAccount, ClusterRole and bindings. The KCM's DaemonSet
// controller creates its Pod, the scheduler places it (its tolerations
// let it onto a node that is still uninitialized and a control-plane
// node), and the lab's kubelet on that node runs the embedded CCM
// (controllers.Manager.RunProcess) with the container's arguments and the
// Pod's ServiceAccount for exactly as long as the Pod runs.

const (
	// CCMServiceAccount is the ServiceAccount the CCM Pod runs as.
	CCMServiceAccount = "cloud-controller-manager"
	// CCMClusterRole is the CCM's ClusterRole (and its binding's name).
	CCMClusterRole = "system:cloud-controller-manager"
	// ccmImage is the "image" whose container the lab's kubelet runs as
	// the embedded CCM.
	ccmImageRepo = "ccmlab/cloud-controller-manager"
	// ccmTokenSeconds is the lifetime of the Pod's token, as a kubelet
	// asks for a projected ServiceAccount token (3607 s).
	ccmTokenSeconds = 3607
)

// CCMDaemonSetName is the CCM DaemonSet's name for p: upstream's
// "aws-cloud-controller-manager" for the AWS-shaped profiles.
func CCMDaemonSetName(p profile.Profile) string {
	return p.ProviderName + "-cloud-controller-manager"
}

// ccmArgs is the CCM container's command line for p with the controllers
// in on switched on.
func ccmArgs(p profile.Profile, clusterCIDR string, t controllers.Tuning, on map[string]bool) []string {
	args := []string{
		"--v=2",
		"--cloud-provider=" + p.ProviderName,
		"--use-service-account-credentials=true",
		"--controllers=" + controllers.ControllersFlag(p, on),
	}
	if p.Has(profile.Route) {
		args = append(args, "--allocate-node-cidrs=true", "--configure-cloud-routes=true", "--cluster-cidr="+clusterCIDR)
	} else {
		args = append(args, "--configure-cloud-routes=false")
	}
	// The lab's own choices where upstream lets a CCM choose (controllers'
	// Tuning): its load balancers are tagged with the lab's cluster name,
	// and more workers than upstream's 1 let flows show within seconds.
	args = append(args, "--cluster-name=ccmlab")
	if t.ServiceWorkers > 0 {
		args = append(args, "--concurrent-service-syncs="+strconv.Itoa(t.ServiceWorkers))
	}
	if t.NodeWorkers > 0 {
		args = append(args, "--concurrent-node-syncs="+strconv.Itoa(t.NodeWorkers))
	}
	return append(args, "--leader-elect=true")
}

// ccmObjects are the CCM's objects as the lab applies them at first start.
func ccmObjects(p profile.Profile, clusterCIDR string, t controllers.Tuning, on map[string]bool) (*v1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding, *appsv1.DaemonSet) {
	ns := metav1.NamespaceSystem
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: CCMServiceAccount, Namespace: ns}}
	rule := func(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: CCMClusterRole},
		Rules: []rbacv1.PolicyRule{
			rule("", []string{"events"}, "create", "patch", "update"),
			rule("", []string{"nodes"}, "*"),
			rule("", []string{"nodes/status"}, "patch"),
			rule("", []string{"services"}, "list", "patch", "update", "watch"),
			rule("", []string{"services/status"}, "list", "patch", "update", "watch"),
			rule("", []string{"serviceaccounts"}, "create", "get", "list", "watch"),
			rule("", []string{"persistentvolumes"}, "get", "list", "update", "watch"),
			rule("", []string{"endpoints"}, "create", "get", "list", "watch", "update"),
			rule("coordination.k8s.io", []string{"leases"}, "create", "get", "list", "watch", "update"),
			rule("", []string{"serviceaccounts/token"}, "create"),
		},
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: CCMServiceAccount, Namespace: ns}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: CCMClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: CCMClusterRole},
		Subjects:   subject,
	}
	// Upstream's CCM reads the apiserver's client-CA ConfigMap for its
	// delegated authentication; the lab's serves no port, but the binding
	// is part of the shape.
	authReader := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-controller-manager:apiserver-authentication-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   subject,
	}
	name := CCMDaemonSetName(p)
	labels := map[string]string{"k8s-app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					NodeSelector: map[string]string{kubelet.LabelControlPlane: ""},
					Tolerations: []v1.Toleration{
						{Key: kube.UninitializedTaint().Key, Value: "true", Effect: v1.TaintEffectNoSchedule},
						{Key: kubelet.LabelControlPlane, Effect: v1.TaintEffectNoSchedule},
					},
					ServiceAccountName: CCMServiceAccount,
					Containers: []v1.Container{{
						Name:      name,
						Image:     ccmImageRepo + ":" + controlplane.KubernetesVersion(),
						Args:      ccmArgs(p, clusterCIDR, t, on),
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}},
					}},
					HostNetwork: true,
				},
			},
		},
	}
	return sa, role, binding, authReader, ds
}

// ensureCCMObjects creates the CCM's objects that do not exist; one that
// does (a restart, or a student's edit) is left as it is.
func (s *Sim) ensureCCMObjects(ctx context.Context) error {
	on := map[string]bool{}
	for _, c := range s.cfg.Controllers {
		on[c] = true
	}
	t := s.cfg.Tuning
	t.ServiceWorkers, t.NodeWorkers = cmp.Or(t.ServiceWorkers, 4), cmp.Or(t.NodeWorkers, 8)
	sa, role, binding, authReader, ds := ccmObjects(s.cfg.Profile, s.cfg.ClusterCIDR, t, on)
	c, ns := s.Client, metav1.NamespaceSystem
	// An administrator installs the CCM from cloud-provider-aws's
	// manifests with kubectl apply, so its objects' field manager is
	// kubectl's (k8s.io/kubectl pkg/cmd/apply/apply.go:1093), not the
	// lab's binary.
	ccmCreate := metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}
	create := []struct {
		what string
		do   func() error
	}{
		{"serviceaccount", func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, sa, ccmCreate)
			return err
		}},
		{"clusterrole", func() error {
			_, err := c.RbacV1().ClusterRoles().Create(ctx, role, ccmCreate)
			return err
		}},
		{"clusterrolebinding", func() error {
			_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, ccmCreate)
			return err
		}},
		{"rolebinding", func() error {
			_, err := c.RbacV1().RoleBindings(ns).Create(ctx, authReader, ccmCreate)
			return err
		}},
		{"daemonset", func() error { _, err := c.AppsV1().DaemonSets(ns).Create(ctx, ds, ccmCreate); return err }},
	}
	for _, o := range create {
		if err := o.do(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the CCM's %s: %w", o.what, err)
		}
	}
	return nil
}

// runCCMObjects applies the CCM's objects once, retrying while the
// apiserver refuses (it may still be bootstrapping its RBAC roles).
func (s *Sim) runCCMObjects(ctx context.Context) error {
	for {
		err := s.ensureCCMObjects(ctx)
		if err == nil {
			close(s.ccmApplied)
			return nil
		}
		s.cfg.Logger.Warn("applying the CCM's DaemonSet; will retry", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// switchCCM is the hosted Manager's Switch: it rewrites --controllers in
// the DaemonSet, whose rollout gives a CCM Pod with the new arguments.
func (s *Sim) switchCCM(ctx context.Context, name string, on bool) error {
	dss := s.Client.AppsV1().DaemonSets(metav1.NamespaceSystem)
	dsName := CCMDaemonSetName(s.cfg.Profile)
	// While the lab is starting it has not applied the DaemonSet yet: the
	// switch waits for it, as the first CCM Pod would.
	select {
	case <-s.ccmApplied:
	case <-ctx.Done():
		return ctx.Err()
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := dss.Get(ctx, dsName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: the DaemonSet kube-system/%s is gone, so no CCM runs", controllers.ErrBusy, dsName)
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(ds.Spec.Template.Spec.Containers, isCCMContainer)
		if i < 0 {
			return fmt.Errorf("%w: the DaemonSet kube-system/%s has no CCM container", controllers.ErrBusy, dsName)
		}
		c := &ds.Spec.Template.Spec.Containers[i]
		args, err := controllers.SwitchArgs(c.Args, s.cfg.Profile, name, on)
		if err != nil {
			return fmt.Errorf("%w: %v", controllers.ErrBusy, err)
		}
		if slices.Equal(args, c.Args) {
			return nil
		}
		c.Args = args
		_, err = dss.Update(ctx, ds, metav1.UpdateOptions{FieldManager: "ccmlab"})
		return err
	})
}

func isCCMContainer(c v1.Container) bool { return strings.HasPrefix(c.Image, ccmImageRepo+":") }

// ccmRuntime is the control-plane kubelet's runtime for the CCM's
// container: a CCM process of the Manager.
type ccmRuntime struct {
	s *Sim
}

// Handles: every Pod whose one container has the CCM's image. Only the
// DaemonSet's Pods run a CCM (Run); any other fails, saying so, rather
// than look like a CCM that runs.
func (r ccmRuntime) Handles(pod *v1.Pod) bool { return isCCMContainer(pod.Spec.Containers[0]) }

// LogKey: klog is one per process, so the CCM's lines are attributed to
// the CCM (lab/controlplane's sink) rather than to one of its Pods; every
// CCM Pod of the DaemonSet shows that one log, as a static Pod's mirrors
// do. Any other Pod with the image has a log of its own: the line saying
// why it runs nothing.
func (r ccmRuntime) LogKey(pod *v1.Pod, container string) string {
	if r.s.ownedByCCMDaemonSet(pod) {
		return podlog.StaticKey(controlplane.ComponentCCM)
	}
	return kubelet.LogKey(pod, container)
}

// maxTerminationMessage is the kubelet's bound on a termination message
// (4096 bytes, as terminationMessagePath is read).
const maxTerminationMessage = 4096

func (r ccmRuntime) Run(ctx context.Context, pod *v1.Pod, c v1.Container) error {
	s := r.s
	key := r.LogKey(pod, c.Name)
	fail := func(err error) error {
		// What the binary would print before it exits: in the Pod's log
		// (kubectl logs --previous) and, as a kubelet reads the
		// termination message, in its last state.
		s.Logs.Append(key, time.Now(), "Error: "+err.Error())
		if msg := err.Error(); len(msg) > maxTerminationMessage {
			return errors.New(strings.ToValidUTF8(msg[:maxTerminationMessage-len(truncated)], "") + truncated)
		}
		return err
	}
	if err := s.checkCCMPod(ctx, pod); err != nil {
		return fail(err)
	}
	args := append(slices.Clone(c.Command[min(1, len(c.Command)):]), c.Args...)
	parsed, err := controllers.ParseArgs(args, s.cfg.Profile)
	if err != nil {
		return fail(err)
	}
	creds, err := s.podCredentials(ctx, pod)
	if err != nil {
		return fail(err)
	}
	return s.Manager.RunProcess(ctx, controllers.Process{Args: parsed, Hostname: pod.Name, Config: creds})
}

const truncated = " [truncated; the whole message is in kubectl logs --previous]"

// ownedByCCMDaemonSet: pod says it is a Pod of the CCM's DaemonSet (in
// kube-system, controlled by the DaemonSet of that name).
func (s *Sim) ownedByCCMDaemonSet(pod *v1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return pod.Namespace == metav1.NamespaceSystem && ref != nil &&
		ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.Kind == "DaemonSet" && ref.Name == CCMDaemonSetName(s.cfg.Profile)
}

// checkCCMPod refuses to run a CCM for any Pod but one of the CCM
// DaemonSet's: the lab has one CCM, which its page switches by editing
// that DaemonSet. A second one (a Pod with the image anywhere) would be
// a second set of controllers in the lab's process, and could hold the
// Lease with arguments no switch changes.
func (s *Sim) checkCCMPod(ctx context.Context, pod *v1.Pod) error {
	name := CCMDaemonSetName(s.cfg.Profile)
	refuse := func(why string) error {
		return fmt.Errorf("ccmlab runs the cloud-controller-manager only as a Pod of DaemonSet %s/%s (edit that DaemonSet to change it); Pod %s/%s %s, so its container runs nothing",
			metav1.NamespaceSystem, name, pod.Namespace, pod.Name, why)
	}
	if !s.ownedByCCMDaemonSet(pod) {
		return refuse("is not one of its Pods")
	}
	ds, err := s.Client.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading DaemonSet %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	if ds.UID != metav1.GetControllerOfNoCopy(pod).UID {
		return refuse("names it as its owner with another UID")
	}
	return nil
}

// podCredentials is what the Pod's process authenticates with: a token
// of its ServiceAccount bound to the Pod (TokenRequest, as the kubelet
// projects one), and for each controller with
// --use-service-account-credentials the token upstream's client builder
// gets for that controller's own ServiceAccount.
func (s *Sim) podCredentials(ctx context.Context, pod *v1.Pod) (func(string) (*rest.Config, error), error) {
	anon := rest.AnonymousClientConfig(s.cfg.RestConfig)
	src := &podToken{client: s.Client, pod: pod}
	if _, err := src.token(ctx); err != nil {
		return nil, err
	}
	own := rest.CopyConfig(anon)
	own.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &bearer{src: src, next: rt} })
	ownClient, err := kubernetes.NewForConfig(own)
	if err != nil {
		return nil, err
	}
	builder := clientbuilder.NewDynamicClientBuilder(anon, ownClient.CoreV1(), metav1.NamespaceSystem)
	var mu sync.Mutex
	cache := map[string]*rest.Config{}
	return func(name string) (*rest.Config, error) {
		if name == "" {
			return own, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if c := cache[name]; c != nil {
			return c, nil
		}
		c, err := builder.Config(name)
		if err != nil {
			return nil, err
		}
		cache[name] = c
		return c, nil
	}, nil
}

// podToken is a Pod's ServiceAccount token, renewed at 80% of its life as
// the kubelet renews projected tokens.
type podToken struct {
	client kubernetes.Interface
	pod    *v1.Pod

	mu      sync.Mutex
	value   string
	renewAt time.Time
}

func (t *podToken) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.value != "" && time.Now().Before(t.renewAt) {
		return t.value, nil
	}
	sa := cmp.Or(t.pod.Spec.ServiceAccountName, "default")
	tr, err := t.client.CoreV1().ServiceAccounts(t.pod.Namespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](ccmTokenSeconds),
			BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: t.pod.Name, UID: t.pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", t.pod.Namespace, sa, err)
	}
	t.value = tr.Status.Token
	t.renewAt = time.Now().Add(ccmTokenSeconds * time.Second * 8 / 10)
	return t.value, nil
}

type bearer struct {
	src  *podToken
	next http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.src.token(r.Context())
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}
