package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// MirrorConfig wires the Mirror to the cloud and the management apiserver.
type MirrorConfig struct {
	Cloud *cloud.Cloud
	// Infra reaches the management apiserver.
	Infra *rest.Config
	// Namespace holds the VMIs (the tenant cluster's namespace in the
	// management cluster).
	Namespace string
	// Resync is how often every instance is compared again, in case a
	// cloud event was missed. Default 10s.
	Resync time.Duration
	Logger *slog.Logger
}

func (c *MirrorConfig) validate() error {
	if c.Resync == 0 {
		c.Resync = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if c.Cloud == nil {
		errs = append(errs, errors.New("a Cloud is required"))
	}
	if c.Infra == nil {
		errs = append(errs, errors.New("an Infra rest config is required"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("a Namespace is required"))
	}
	if c.Resync < time.Second {
		errs = append(errs, fmt.Errorf("resync %s: at least 1s", c.Resync))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubevirt: invalid mirror config: %w", err)
	}
	return nil
}

// Mirror plays KubeVirt for the lab's cloud: each VM that is not
// terminated has a VMI named as its Node, whose phase follows the VM
// (Running; Succeeded once it is stopped, as a VMI whose guest shut down);
// a terminated VM's VMI is deleted. The other way round, a VMI deleted by
// someone else (kubectl --infra delete vmi) takes its VM with it: the
// instance is terminated, its kubelet stops, and the tenant's
// node-lifecycle controller is the one to notice.
type Mirror struct {
	cfg  MirrorConfig
	vmis dynamic.ResourceInterface
	kube kubernetes.Interface
	ext  apiextensionsclient.Interface

	mu sync.Mutex
	// ours are the VMIs the mirror itself is deleting.
	ours map[string]bool
}

// NewMirror builds a Mirror; nothing runs until Run.
func NewMirror(cfg MirrorConfig) (*Mirror, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg.Infra)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg.Infra)
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg.Infra)
	if err != nil {
		return nil, err
	}
	return &Mirror{cfg: cfg, vmis: dyn.Resource(GVR).Namespace(cfg.Namespace), kube: kube, ext: ext, ours: map[string]bool{}}, nil
}

// Install creates the VMI CRD and the namespace and waits until the
// resource is served.
func (m *Mirror) Install(ctx context.Context) error {
	if _, err := m.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, CRD(), metav1.CreateOptions{FieldManager: "virt-operator"}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("installing the VMI CRD: %w", err)
	}
	if _, err := m.kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.cfg.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", m.cfg.Namespace, err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := m.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, CRD().Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Run installs the CRD, then keeps the VMIs in step with the cloud until
// ctx ends.
func (m *Mirror) Run(ctx context.Context) error {
	if err := m.Install(ctx); err != nil {
		return err
	}
	events, stop := m.cfg.Cloud.Subscribe(256)
	defer stop()
	go m.followDeletes(ctx)
	tick := time.NewTicker(m.cfg.Resync)
	defer tick.Stop()
	for {
		if err := m.syncAll(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("mirroring VMs as VMIs; will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case e, ok := <-events:
			if !ok {
				return nil
			}
			if e.Kind != cloud.EventInstance {
				continue
			}
		}
	}
}

// syncAll makes the VMIs match the cloud's instances.
func (m *Mirror) syncAll(ctx context.Context) error {
	list, err := m.vmis.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]*VMI{}
	for i := range list.Items {
		v, err := FromUnstructured(list.Items[i].Object)
		if err != nil {
			return err
		}
		have[v.Name] = v
	}
	var errs []error
	live := map[string]bool{}
	for _, inst := range m.cfg.Cloud.Snapshot().Instances {
		name := inst.PrivateDNSName
		if inst.State == cloud.InstanceTerminated || inst.State == cloud.InstanceShuttingDown {
			continue
		}
		live[name] = true
		want := desired(inst, m.cfg.Namespace)
		cur := have[name]
		switch {
		case cur == nil:
			errs = append(errs, m.create(ctx, want))
		case cur.Status.Phase != want.Status.Phase || len(cur.InternalIPs()) == 0:
			cur.Status = want.Status
			errs = append(errs, m.update(ctx, cur))
		}
	}
	for name := range have {
		if !live[name] {
			errs = append(errs, m.delete(ctx, name))
		}
	}
	return errors.Join(errs...)
}

// desired is the VMI of inst: named as its Node, the guest's hostname the
// same, its instancetype annotated, its phase from the VM's state.
func desired(inst cloud.Instance, ns string) *VMI {
	phase := PhaseRunning
	ready := "True"
	switch inst.State {
	case cloud.InstancePending:
		phase, ready = PhaseScheduling, "False"
	case cloud.InstanceStopping, cloud.InstanceStopped:
		phase, ready = PhaseSucceeded, "False"
	}
	return &VMI{
		ObjectMeta: metav1.ObjectMeta{
			Name: inst.PrivateDNSName, Namespace: ns,
			Annotations: map[string]string{InstanceTypeAnnotation: DefaultInstanceType},
			Labels:      map[string]string{"kubevirt.io/domain": inst.PrivateDNSName},
		},
		Spec: VMISpec{Hostname: inst.PrivateDNSName, Domain: map[string]any{}},
		Status: VMIStatus{
			Phase: phase,
			// The infra node the VM's launcher Pod runs on: one per zone.
			NodeName:   InfraNodeName(inst.Zone),
			Interfaces: []VMIInterface{{Name: DefaultInterface, IPAddress: inst.PrivateIP, IPAddresses: []string{inst.PrivateIP}}},
			Conditions: []VMICondition{{Type: "Ready", Status: ready}},
		},
	}
}

func (m *Mirror) create(ctx context.Context, v *VMI) error {
	obj, err := v.ToUnstructured()
	if err != nil {
		return err
	}
	_, err = m.vmis.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: "virt-controller"})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (m *Mirror) update(ctx context.Context, v *VMI) error {
	obj, err := v.ToUnstructured()
	if err != nil {
		return err
	}
	_, err = m.vmis.Update(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{FieldManager: "virt-handler"})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the next sync sees the newer object
	}
	return err
}

func (m *Mirror) delete(ctx context.Context, name string) error {
	m.mu.Lock()
	m.ours[name] = true
	m.mu.Unlock()
	err := m.vmis.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// followDeletes terminates the VM of a VMI someone else deleted.
func (m *Mirror) followDeletes(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := m.vmis.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			m.vmiDeleted(ctx, u.GetName())
		}
		w.Stop()
	}
}

func (m *Mirror) vmiDeleted(ctx context.Context, name string) {
	m.mu.Lock()
	ours := m.ours[name]
	delete(m.ours, name)
	m.mu.Unlock()
	if ours {
		return
	}
	for _, inst := range m.cfg.Cloud.Snapshot().Instances {
		if inst.PrivateDNSName != name || inst.State == cloud.InstanceTerminated || inst.State == cloud.InstanceShuttingDown {
			continue
		}
		// The VM goes with its VMI; KubeVirt calls nothing of the cloud's,
		// so neither does the call log's "kubevirt" caller stand for a
		// user: it is the management side.
		if _, err := m.cfg.Cloud.TerminateInstance(cloud.WithCaller(ctx, "kubevirt"), inst.ID); err != nil {
			m.cfg.Logger.Warn("terminating the VM of a deleted VMI", "vmi", name, "err", err)
		}
	}
}
