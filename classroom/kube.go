package classroom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The labels every object of a class carries. Deleting a class selects on
// part-of and managed-by together: the portal's own objects (deploy/
// classroom.yaml) are part of the classroom too, but were not created by
// it, and "ccmlab classroom delete" must not take the portal away.
const (
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelStudent   = "ccmlab.io/student"
	partOf         = "ccmlab-classroom"
	managedBy      = "ccmlab-classroom"
	fieldManager   = "ccmlab-classroom"
	// instructorSecret keeps a generated instructor token in the cluster,
	// so a portal that restarts with an empty data dir keeps its link.
	instructorSecret = "ccmlab-classroom-instructor"
	labPort          = 8080
	// labDataDir is where the image's entrypoint keeps the lab's state.
	labDataDir = "/home/nonroot/lab"
	nonroot    = 65532
)

// Storage kinds of the kubernetes backend.
const (
	StoragePVC      = "pvc"
	StorageEmptyDir = "emptydir"
)

// KubeOptions configure the kubernetes backend.
type KubeOptions struct {
	// RestConfig reaches the cluster (from --kubeconfig, or in-cluster).
	RestConfig *rest.Config
	// Namespace holds every student's objects; it is created if missing.
	Namespace string
	// Image is the ccmlab image each lab runs (built from the Dockerfile).
	Image string
	// Storage is StoragePVC (default) or StorageEmptyDir, for clusters
	// without a volume provisioner; an emptyDir loses the lab's data when
	// its Pod goes.
	Storage string
	// StorageSize is each PVC's request; default 2Gi.
	StorageSize string
	// StorageClass names the PVCs' StorageClass; empty: the default one.
	StorageClass string
	// LabAddr is how the portal reaches a student's lab; default the
	// lab's Service by its cluster DNS name, <svc>.<namespace>.svc:80.
	LabAddr func(namespace, service string) string
}

func (o *KubeOptions) defaults() {
	if o.Storage == "" {
		o.Storage = StoragePVC
	}
	if o.StorageSize == "" {
		o.StorageSize = "2Gi"
	}
	if o.LabAddr == nil {
		o.LabAddr = func(ns, svc string) string { return svc + "." + ns + ".svc:80" }
	}
}

func (o *KubeOptions) validate() error {
	if o.RestConfig == nil {
		return errors.New("--backend kubernetes: no cluster to use (give --kubeconfig FILE, or run the portal in the cluster)")
	}
	if o.Namespace == "" {
		return errors.New("--backend kubernetes needs --namespace NS: every student's objects go there")
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.Image == "" {
		return errors.New("--backend kubernetes needs --image IMAGE: the ccmlab image every lab runs (docker build -t ccmlab:dev . from the repository)")
	}
	switch o.Storage {
	case StoragePVC, StorageEmptyDir:
	default:
		return fmt.Errorf("--storage %q: use pvc (a PersistentVolumeClaim per lab) or emptydir (for clusters without a volume provisioner; the data goes with the Pod)", o.Storage)
	}
	if _, err := resource.ParseQuantity(o.StorageSize); err != nil {
		return fmt.Errorf("storage size %q: %w", o.StorageSize, err)
	}
	return nil
}

// ObjectName is the name of every object of a student's lab.
func ObjectName(student string) string { return "ccmlab-" + student }

func classLabels() map[string]string {
	return map[string]string{LabelPartOf: partOf, LabelManagedBy: managedBy}
}

func studentLabels(name string) map[string]string {
	l := classLabels()
	l[LabelStudent] = name
	l["app.kubernetes.io/name"] = "ccmlab"
	l["app.kubernetes.io/component"] = "lab"
	return l
}

// selectorLabels pick a student's Pods (a Deployment's selector is
// immutable: keep it to labels that never change).
func selectorLabels(name string) map[string]string {
	return map[string]string{LabelPartOf: partOf, LabelStudent: name}
}

// classSelector selects everything a class created.
func classSelector() string { return labels.SelectorFromSet(classLabels()).String() }

// kubeBackend runs each lab as a Deployment of one Pod in a cluster, with
// its Secret (the student's token), its volume and its Service. Every
// object is created (or updated) at start; the backend then follows the
// Pods to know which labs are ready.
type kubeBackend struct {
	cfg     *Config
	opts    *KubeOptions
	tokens  *tokens
	log     *slog.Logger
	client  kubernetes.Interface
	onReady readyFunc

	mu     sync.Mutex
	labs   map[string]*kubeLab
	pods   corelisters.PodLister
	closed bool
}

type kubeLab struct {
	name  string
	state string
	// ready closes when the lab becomes ready; done closes when that
	// readiness ends.
	ready chan struct{}
	done  chan struct{}
}

func newKubeBackend(cfg *Config, t *tokens, onReady readyFunc) (*kubeBackend, error) {
	client, err := kubernetes.NewForConfig(cfg.Kube.RestConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	b := &kubeBackend{cfg: cfg, opts: &cfg.Kube, tokens: t, log: cfg.Logger.With("backend", "kubernetes"), client: client,
		onReady: onReady, labs: map[string]*kubeLab{}}
	for _, s := range cfg.Students {
		b.labs[s] = &kubeLab{name: s, state: stateStopped, ready: make(chan struct{})}
	}
	return b, nil
}

// adoptTokens makes the cluster the source of truth for tokens: a student
// whose Secret exists keeps its token (a portal restarted with an empty
// data dir keeps every link valid), and so does a generated instructor
// token. It returns whether a token changed.
func (b *kubeBackend) adoptTokens(ctx context.Context, instructorGiven bool) (bool, error) {
	ns := b.opts.Namespace
	changed := false
	for _, s := range b.cfg.Students {
		sec, err := b.client.CoreV1().Secrets(ns).Get(ctx, ObjectName(s), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, fmt.Errorf("reading %s's Secret: %w", s, err)
		}
		if tok := string(sec.Data["token"]); tok != "" && tok != b.tokens.students[s] {
			b.tokens.students[s] = tok
			changed = true
		}
	}
	if instructorGiven {
		return changed, nil
	}
	sec, err := b.client.CoreV1().Secrets(ns).Get(ctx, instructorSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading the instructor's Secret: %w", err)
	default:
		if tok := string(sec.Data["token"]); tok != "" && tok != b.tokens.instructor {
			b.tokens.instructor = tok
			changed = true
		}
	}
	return changed, nil
}

// Prepare creates the namespace when it is missing and applies every
// student's objects; run again (a restarted portal) it updates them in
// place, keeping tokens and volumes.
func (b *kubeBackend) Prepare(ctx context.Context) error {
	ns := b.opts.Namespace
	if err := ensureNamespace(ctx, b.client, ns); err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if b.cfg.Token == "" {
		sec := corev1ac.Secret(instructorSecret, ns).WithLabels(classLabels()).
			WithType(corev1.SecretTypeOpaque).WithData(map[string][]byte{"token": []byte(b.tokens.instructor)})
		if _, err := b.client.CoreV1().Secrets(ns).Apply(ctx, sec, opts); err != nil {
			return fmt.Errorf("keeping the instructor's token in Secret %s/%s: %w", ns, instructorSecret, err)
		}
	}
	for _, s := range b.cfg.Students {
		if err := b.apply(ctx, s, opts); err != nil {
			return fmt.Errorf("creating the lab of %s in namespace %s: %w", s, ns, err)
		}
		b.log.Info("lab applied", "student", s, "namespace", ns)
	}
	return nil
}

// ensureNamespace creates ns when it does not exist. A portal running in
// the cluster with only its Role cannot read namespaces: a Forbidden means
// "assume it is there" (deploy/classroom.yaml creates it).
func ensureNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("--namespace %s: %w", ns, err)
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: classLabels()}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// apply applies one student's Secret, volume, Deployment and Service.
func (b *kubeBackend) apply(ctx context.Context, s string, opts metav1.ApplyOptions) error {
	ns, name, lbl := b.opts.Namespace, ObjectName(s), studentLabels(s)
	core := b.client.CoreV1()
	sec := corev1ac.Secret(name, ns).WithLabels(lbl).WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{"token": []byte(b.tokens.students[s])})
	if _, err := core.Secrets(ns).Apply(ctx, sec, opts); err != nil {
		return fmt.Errorf("the Secret: %w", err)
	}
	vol := corev1ac.Volume().WithName("data")
	if b.opts.Storage == StoragePVC {
		spec := corev1ac.PersistentVolumeClaimSpec().WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(b.opts.StorageSize)}))
		if b.opts.StorageClass != "" {
			spec.WithStorageClassName(b.opts.StorageClass)
		}
		pvc := corev1ac.PersistentVolumeClaim(name, ns).WithLabels(lbl).WithSpec(spec)
		if _, err := core.PersistentVolumeClaims(ns).Apply(ctx, pvc, opts); err != nil {
			return fmt.Errorf("the PersistentVolumeClaim: %w", err)
		}
		vol.WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(name))
	} else {
		vol.WithEmptyDir(corev1ac.EmptyDirVolumeSource())
	}
	if _, err := b.client.AppsV1().Deployments(ns).Apply(ctx, b.deployment(s, vol), opts); err != nil {
		return fmt.Errorf("the Deployment: %w", err)
	}
	svc := corev1ac.Service(name, ns).WithLabels(lbl).WithSpec(corev1ac.ServiceSpec().
		WithSelector(selectorLabels(s)).
		WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromString("http"))))
	if _, err := core.Services(ns).Apply(ctx, svc, opts); err != nil {
		return fmt.Errorf("the Service: %w", err)
	}
	return nil
}

// labArgs are the lab's flags: the class's, and the host of its Service
// as the portal reaches it (LabAddr), which the lab must answer to (its
// readiness probe comes by the Pod's IP, which its wildcard --listen
// allows).
func (b *kubeBackend) labArgs(s string) []string {
	args := b.cfg.Lab.args(goMemory(b.cfg.Lab.Memory))
	host, _, err := net.SplitHostPort(b.opts.LabAddr(b.opts.Namespace, ObjectName(s)))
	if err == nil && host != "" && net.ParseIP(host) == nil && host != "localhost" {
		args = append(args, "--allow-host", host)
	}
	return args
}

// deployment is one lab: a single replica (etcd inside owns the volume, so
// never two at once: Recreate), hardened as deploy/ccmlab.yaml is.
func (b *kubeBackend) deployment(s string, vol *corev1ac.VolumeApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	name, lbl := ObjectName(s), studentLabels(s)
	ctr := corev1ac.Container().WithName("ccmlab").WithImage(b.opts.Image).
		WithArgs(b.labArgs(s)...).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(labPort)).
		WithEnv(corev1ac.EnvVar().WithName("CCMLAB_TOKEN").WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(name).WithKey("token")))).
		WithReadinessProbe(corev1ac.Probe().WithPeriodSeconds(2).
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString("http")))).
		WithResources(b.cfg.Lab.podResources()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("data").WithMountPath(labDataDir)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	pod := corev1ac.PodSpec().
		// The lab embeds its own cluster: it needs no API access to this one.
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).WithRunAsUser(nonroot).WithRunAsGroup(nonroot).WithFSGroup(nonroot).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(ctr).
		WithVolumes(vol)
	return appsv1ac.Deployment(name, b.opts.Namespace).WithLabels(lbl).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(1).
		WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(s))).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(lbl).WithSpec(pod)))
}

// Run follows the class's Pods until ctx ends. The labs keep running: a
// class in a cluster outlives its portal, and "ccmlab classroom delete"
// ends it.
func (b *kubeBackend) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(b.client, 0,
		informers.WithNamespace(b.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = classSelector() }))
	inf := factory.Core().V1().Pods()
	b.mu.Lock()
	b.pods = inf.Lister()
	b.mu.Unlock()
	update := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			b.update(p.Labels[LabelStudent])
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: update,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	b.mu.Lock()
	b.closed = true
	for _, l := range b.labs {
		if l.state == stateReady {
			close(l.done)
		}
		l.state = stateStopped
	}
	b.mu.Unlock()
	return nil
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// update recomputes a student's lab state from their Pods.
func (b *kubeBackend) update(name string) {
	b.mu.Lock()
	l, ok := b.labs[name]
	if !ok || b.closed || b.pods == nil {
		b.mu.Unlock()
		return
	}
	pods, _ := b.pods.Pods(b.opts.Namespace).List(labels.SelectorFromSet(selectorLabels(name)))
	state := stateStopped
	for _, p := range pods {
		switch {
		case podReady(p):
			state = stateReady
		case p.DeletionTimestamp == nil && state != stateReady:
			state = stateStarting
		case p.DeletionTimestamp != nil && state == stateStopped:
			state = stateStopping
		}
	}
	was := l.state
	l.state = state
	var done chan struct{}
	switch {
	case state == stateReady && was != stateReady:
		l.done = make(chan struct{})
		done = l.done
		close(l.ready)
	case state != stateReady && was == stateReady:
		close(l.done)
		l.ready = make(chan struct{})
	}
	b.mu.Unlock()
	if was != state {
		b.log.Info("lab state", "student", name, "state", state)
	}
	if done != nil && b.onReady != nil {
		b.onReady(name, b.addr(name), done)
	}
}

func (b *kubeBackend) addr(name string) string {
	return b.opts.LabAddr(b.opts.Namespace, ObjectName(name))
}

// Visit has nothing to record: labs in a cluster do not idle out.
func (b *kubeBackend) Visit(string) func() { return func() {} }

// Ensure waits until the student's lab is ready.
func (b *kubeBackend) Ensure(ctx context.Context, name string) (string, error) {
	timeout := b.cfg.Clock.NewTimer(b.cfg.StartTimeout)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		l := b.labs[name]
		state, ready, closed := l.state, l.ready, b.closed
		b.mu.Unlock()
		if closed {
			return "", errors.New("the classroom is shutting down")
		}
		if state == stateReady {
			return b.addr(name), nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-timeout.C():
			return "", fmt.Errorf("the lab of %s is %s: its Pod was not ready within %s (kubectl -n %s describe pod -l %s=%s)",
				name, state, b.cfg.StartTimeout, b.opts.Namespace, LabelStudent, name)
		}
	}
}

// Status is the lab's state as its Pods say.
func (b *kubeBackend) Status(name string) (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.labs[name]; l.state == stateReady {
		return l.state, b.addr(name)
	}
	return b.labs[name].state, ""
}

// classKind is one kind of object a class is made of, as DeleteClass
// lists and deletes it.
type classKind struct {
	name   string
	list   func(context.Context, metav1.ListOptions) ([]string, error)
	delete func(context.Context, string, metav1.DeleteOptions) error
}

// listDeleter is what a typed client of one kind in one namespace offers
// (apps.Deployments(ns), core.Secrets(ns), ...), L being its list type.
type listDeleter[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kindOf makes a classKind of a typed client: the names its List finds,
// sorted, and its Delete.
func kindOf[L runtime.Object](name string, c listDeleter[L]) classKind {
	return classKind{name: name, delete: c.Delete, list: func(ctx context.Context, opts metav1.ListOptions) ([]string, error) {
		l, err := c.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, o := range items {
			m, err := meta.Accessor(o)
			if err != nil {
				return nil, err
			}
			out = append(out, m.GetName())
		}
		slices.Sort(out)
		return out, nil
	}}
}

// DeleteClass removes everything a class created in opts.Namespace (by
// label: part-of and managed-by ccmlab-classroom), says each object on out,
// and waits up to wait for the labs' Pods to be gone. The namespace goes
// too when the class created it.
func DeleteClass(ctx context.Context, opts KubeOptions, out io.Writer, wait time.Duration) error {
	if opts.RestConfig == nil {
		return errors.New("classroom delete: no cluster to use (give --kubeconfig FILE)")
	}
	if opts.Namespace == "" {
		return errors.New("classroom delete needs --namespace NS")
	}
	client, err := kubernetes.NewForConfig(opts.RestConfig)
	if err != nil {
		return err
	}
	ns, sel := opts.Namespace, metav1.ListOptions{LabelSelector: classSelector()}
	bg := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	core, apps := client.CoreV1(), client.AppsV1()
	kinds := []classKind{
		kindOf("deployment", apps.Deployments(ns)),
		kindOf("service", core.Services(ns)),
		kindOf("secret", core.Secrets(ns)),
		kindOf("persistentvolumeclaim", core.PersistentVolumeClaims(ns)),
	}
	removed := 0
	for _, k := range kinds {
		list, err := k.list(ctx, sel)
		if err != nil {
			return fmt.Errorf("listing the class's %ss in %s: %w", k.name, ns, err)
		}
		for _, n := range list {
			if err := k.delete(ctx, n, bg); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s/%s in %s: %w", k.name, n, ns, err)
			}
			fmt.Fprintf(out, "removed %s/%s\n", k.name, n)
			removed++
		}
	}
	// The Deployments' Pods go through the garbage collector: wait for
	// them, so "removed" means the labs no longer run.
	deadline := time.Now().Add(wait)
	for {
		pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelPartOf + "=" + partOf + "," + LabelStudent})
		if err != nil {
			return fmt.Errorf("listing the labs' Pods: %w", err)
		}
		if len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(out, "%d lab Pods are still terminating in %s\n", len(pods.Items), ns)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	nsObj, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil && nsObj.Labels[LabelManagedBy] == managedBy && nsObj.DeletionTimestamp == nil:
		if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns, err)
		}
		fmt.Fprintf(out, "removed namespace/%s (the class created it)\n", ns)
		removed++
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if removed == 0 {
		fmt.Fprintf(out, "nothing of a class in namespace %s\n", ns)
	} else {
		fmt.Fprintf(out, "removed %d objects of the class in namespace %s\n", removed, ns)
	}
	return nil
}
