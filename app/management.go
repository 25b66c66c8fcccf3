package app

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/lab/kubevirt"
	"github.com/ccmlab/ccmlab/server/stream"
)

// managementStream shows the page the kubevirt profile's management
// cluster: the CCM's Deployment and Pod there and the VMIs. It reads them
// from the management apiserver once a second and publishes them whole
// when they differ. A poll rather than informers: three small lists a
// second, and no second set of informers to stop on a restart (a process
// may run several labs one after the other).
type managementStream struct {
	infra kubernetes.Interface
	dyn   dynamic.Interface
	ns    string
	last  atomic.Pointer[stream.Management]
}

// managementEvery is how often the management side is read.
const managementEvery = time.Second

func newManagementStream(rc *rest.Config, ns string) (*managementStream, error) {
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &managementStream{infra: c, dyn: d, ns: ns}, nil
}

// current is the management side as last read (nil before the first read).
func (m *managementStream) current() *stream.Management { return m.last.Load() }

func (m *managementStream) read(ctx context.Context) (*stream.Management, error) {
	out := &stream.Management{Namespace: m.ns, VMIs: []stream.ManagementVMI{}}
	d, err := m.infra.AppsV1().Deployments(m.ns).Get(ctx, sim.InfraCCMName, metav1.GetOptions{})
	switch {
	case err == nil:
		out.CCM.Deployment, out.CCM.Ready = d.Name, d.Status.ReadyReplicas
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			for _, a := range cs[0].Args {
				if v, ok := strings.CutPrefix(a, "--controllers="); ok {
					out.CCM.Controllers = v
				}
			}
		}
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	pods, err := m.infra.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + sim.InfraCCMName})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == "Running" {
			out.CCM.Pod, out.CCM.Node = p.Name, p.Spec.NodeName
		}
	}
	vmis, err := m.dyn.Resource(kubevirt.GVR).Namespace(m.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, u := range vmis.Items {
		v, err := kubevirt.FromUnstructured(u.Object)
		if err != nil {
			continue
		}
		vm := stream.ManagementVMI{Name: v.Name, Phase: v.Status.Phase, Node: v.Status.NodeName}
		if ips := v.InternalIPs(); len(ips) > 0 {
			vm.IP = ips[0]
		}
		out.VMIs = append(out.VMIs, vm)
	}
	slices.SortFunc(out.VMIs, func(a, b stream.ManagementVMI) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// run reads and publishes until ctx ends. A failed read is tried again on
// the next tick: the page keeps what it was last sent.
func (m *managementStream) run(ctx context.Context, pub publisher) error {
	tick := time.NewTicker(managementEvery)
	defer tick.Stop()
	for {
		if cur, err := m.read(ctx); err == nil {
			if prev := m.last.Load(); prev == nil || !reflect.DeepEqual(prev, cur) {
				m.last.Store(cur)
				pub.publish(*cur)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
