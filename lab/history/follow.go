package history

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// Sources are what a Recorder follows. Client and Cloud are required;
// without Dataplane no traces are recorded.
type Sources struct {
	Client    kubernetes.Interface
	Cloud     *cloud.Cloud
	Dataplane *dataplane.Dataplane
}

// Follower records the lab's changes into a Recorder. Controller switches
// are not among its sources (the lab layer does not know the controller
// manager): whoever owns the switches records them with Record.
type Follower struct {
	rec     *Recorder
	src     Sources
	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
}

// NewFollower wires the informers; nothing runs until Run.
func NewFollower(rec *Recorder, src Sources) (*Follower, error) {
	if rec == nil || src.Client == nil || src.Cloud == nil {
		return nil, errors.New("history: a Recorder, a Client and a Cloud are required")
	}
	f := &Follower{rec: rec, src: src, factory: informers.NewSharedInformerFactory(src.Client, 0)}
	core := f.factory.Core().V1()
	for _, w := range []struct {
		resource string
		inf      cache.SharedIndexInformer
	}{
		{"nodes", core.Nodes().Informer()},
		{"services", core.Services().Informer()},
		{"pods", core.Pods().Informer()},
		{"events", core.Events().Informer()},
	} {
		resource := w.resource
		if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					f.object(resource, VerbCreated, nil, obj)
				}
			},
			UpdateFunc: func(old, obj any) { f.object(resource, VerbUpdated, old, obj) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				f.object(resource, VerbDeleted, obj, nil)
			},
		}); err != nil {
			return nil, err
		}
		f.synced = append(f.synced, w.inf.HasSynced)
	}
	return f, nil
}

// Run follows until ctx ends.
func (f *Follower) Run(ctx context.Context) error {
	calls, stopCalls := f.src.Cloud.Subscribe(4096)
	defer stopCalls()
	var traces <-chan dataplane.Trace
	if f.src.Dataplane != nil {
		var stop func()
		traces, stop = f.src.Dataplane.SubscribeTraces(1024)
		defer stop()
	}
	f.factory.Start(ctx.Done())
	defer f.factory.Shutdown()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-calls:
			if !ok {
				return nil
			}
			switch {
			case ev.Kind == cloud.EventCall && ev.Call != nil && ev.Call.State == cloud.CallDone:
				c := *ev.Call
				f.rec.Record(Entry{Kind: KindCall, Call: &c})
			case ev.Kind == cloud.EventFaults:
				faults := f.src.Cloud.Faults()
				f.rec.Record(Entry{Kind: KindFaults, Faults: &faults})
			}
		case t, ok := <-traces:
			if !ok {
				traces = nil
				continue
			}
			f.rec.Record(Entry{Kind: KindTrace, Trace: &t})
		}
	}
}

// WaitForSync waits until the informers have listed what exists, so that
// everything after is recorded as a change.
func (f *Follower) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), f.synced...) {
		return errors.New("history: caches did not sync")
	}
	return nil
}

func (f *Follower) object(resource, verb string, old, obj any) {
	var o, n metav1.Object
	if old != nil {
		o, _ = old.(metav1.Object)
	}
	if obj != nil {
		n, _ = obj.(metav1.Object)
	}
	cur := n
	if cur == nil {
		cur = o
	}
	if cur == nil {
		return
	}
	if verb == VerbUpdated && !significant(o, n) {
		return
	}
	ch := &ObjectChange{Resource: resource, Namespace: cur.GetNamespace(), Name: cur.GetName(), UID: string(cur.GetUID()), Verb: verb}
	if old != nil {
		ch.Old, _ = old.(runtimeObject)
	}
	if obj != nil {
		ch.New, _ = obj.(runtimeObject)
	}
	switch verb {
	case VerbCreated:
		ch.Managers = managersOf(n)
	case VerbUpdated:
		ch.Managers = Writers(o, n)
	}
	f.rec.Record(Entry{Kind: KindObject, Object: ch})
}

// Writers names the field managers that wrote the change from old to new:
// those whose managedFields entry is new, whose timestamp moved or whose
// field set grew. A manager whose fields were only taken away (another
// manager removed or took over what it owned) did not write.
func Writers(old, new metav1.Object) []string {
	type key struct{ manager, op, sub string }
	prev := map[key]metav1.ManagedFieldsEntry{}
	for _, m := range old.GetManagedFields() {
		prev[key{m.Manager, string(m.Operation), m.Subresource}] = m
	}
	set := map[string]bool{}
	for _, m := range new.GetManagedFields() {
		p, ok := prev[key{m.Manager, string(m.Operation), m.Subresource}]
		switch {
		case !ok:
			set[m.Manager] = true
		case !timeEqual(p.Time, m.Time):
			set[m.Manager] = true
		case fieldsLen(m) > fieldsLen(p):
			set[m.Manager] = true
		}
	}
	return sortedKeys(set)
}

func managersOf(o metav1.Object) []string {
	set := map[string]bool{}
	for _, m := range o.GetManagedFields() {
		set[m.Manager] = true
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func fieldsLen(m metav1.ManagedFieldsEntry) int {
	return len(m.FieldsV1.GetRawBytes()) // nil-safe
}

// significant says whether an update changed more than bookkeeping:
// resourceVersion, managedFields and, for Nodes, heartbeat times.
func significant(old, new metav1.Object) bool {
	if old == nil || new == nil {
		return true
	}
	on, ok1 := old.(*corev1.Node)
	nn, ok2 := new.(*corev1.Node)
	if ok1 && ok2 {
		return !reflect.DeepEqual(nodeEssence(on), nodeEssence(nn))
	}
	if old.GetGeneration() != new.GetGeneration() {
		return true
	}
	a, aok := old.(runtimeObject)
	b, bok := new.(runtimeObject)
	if !aok || !bok {
		return true
	}
	x, y := a.DeepCopyObject().(metav1.Object), b.DeepCopyObject().(metav1.Object)
	for _, o := range []metav1.Object{x, y} {
		o.SetResourceVersion("")
		o.SetManagedFields(nil)
	}
	return !reflect.DeepEqual(x, y)
}

func nodeEssence(n *corev1.Node) *corev1.Node {
	c := n.DeepCopy()
	c.ResourceVersion, c.ManagedFields = "", nil
	zero := metav1.Time{Time: time.Time{}}
	for i := range c.Status.Conditions {
		c.Status.Conditions[i].LastHeartbeatTime = zero
	}
	return c
}
