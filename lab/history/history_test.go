package history

import (
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRecorderNumbersAndBounds(t *testing.T) {
	r, err := New(Config{Size: 16})
	if err != nil {
		t.Fatal(err)
	}
	mark := r.Mark("reset:x")
	for i := range 10 {
		r.Record(Entry{Kind: KindMark, Mark: string(rune('a' + i))})
	}
	got, err := r.Since(mark)
	if err != nil || len(got) != 10 || got[0].Seq != mark+1 || got[9].Seq != r.Last() {
		t.Fatalf("since mark: %d entries, err %v", len(got), err)
	}
	for range 20 {
		r.Record(Entry{Kind: KindMark})
	}
	got, err = r.Since(mark)
	if !errors.Is(err, ErrTruncated) || len(got) != 16 || got[15].Seq != r.Last() {
		t.Fatalf("after wrapping: %d entries, err %v", len(got), err)
	}
	if got, err := r.Since(r.Last()); err != nil || len(got) != 0 {
		t.Fatalf("nothing new: %v %v", got, err)
	}
	for _, size := range []int{1, 1 << 21} {
		if _, err := New(Config{Size: size}); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}

func TestRecorderStampsSwitches(t *testing.T) {
	r, _ := New(Config{})
	r.SetSwitches(map[string]bool{"node": true, "service": false})
	a := r.Record(Entry{Kind: KindMark})
	r.Record(Entry{Kind: KindSwitch, Switch: &Switch{Controller: "service", On: true}})
	b := r.Record(Entry{Kind: KindMark})
	r.Record(Entry{Kind: KindSwitch, Switch: &Switch{Controller: "node", On: false}})
	c := r.Record(Entry{Kind: KindMark})
	if !a.WasOff("service") || a.WasOff("node") || b.WasOff("service") || !c.WasOff("node") || c.WasOff("service") {
		t.Fatalf("off: a=%v b=%v c=%v", a.Off, b.Off, c.Off)
	}
}

func TestRecorderWakesSubscribers(t *testing.T) {
	r, _ := New(Config{})
	ch, cancel := r.Subscribe()
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Record(Entry{Kind: KindMark})
			}
		}()
	}
	wg.Wait()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up")
	}
	if r.Last() != 400 {
		t.Fatalf("last = %d", r.Last())
	}
	cancel()
	cancel()
}

func entry(manager string, op metav1.ManagedFieldsOperationType, at time.Time, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &metav1.Time{Time: at}, FieldsV1: metav1.NewFieldsV1(fields)}
}

// Who wrote a change: the manager whose entry is new or moved, not the
// one that only lost fields.
func TestWriters(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	kubelet := entry("kubelet", metav1.ManagedFieldsOperationUpdate, t0, `{"f:spec":{"f:taints":{}}}`)
	for _, tc := range []struct {
		name     string
		old, new []metav1.ManagedFieldsEntry
		want     []string
	}{
		{"the CCM initializes", []metav1.ManagedFieldsEntry{kubelet},
			[]metav1.ManagedFieldsEntry{entry("kubelet", metav1.ManagedFieldsOperationUpdate, t0, `{}`), entry("aws-cloud-controller-manager", metav1.ManagedFieldsOperationUpdate, t1, `{"f:spec":{"f:providerID":{}}}`)},
			[]string{"aws-cloud-controller-manager"}},
		{"kubectl taint removes the only taint", []metav1.ManagedFieldsEntry{kubelet},
			[]metav1.ManagedFieldsEntry{entry("kubelet", metav1.ManagedFieldsOperationUpdate, t0, `{}`)}, nil},
		{"a writer in the same second with more fields", []metav1.ManagedFieldsEntry{kubelet},
			[]metav1.ManagedFieldsEntry{entry("kubelet", metav1.ManagedFieldsOperationUpdate, t0, `{"f:spec":{"f:taints":{},"f:podCIDR":{}}}`)}, []string{"kubelet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &corev1.Node{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.old}}
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.new}}
			got := Writers(o, n)
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("writers = %v, want %v", got, tc.want)
			}
		})
	}
}

// Heartbeats alone are not a change worth recording.
func TestSignificant(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	beat := n.DeepCopy()
	beat.ResourceVersion = "2"
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if significant(n, beat) {
		t.Error("a heartbeat is significant")
	}
	down := beat.DeepCopy()
	down.Status.Conditions[0].Status = corev1.ConditionUnknown
	if !significant(beat, down) {
		t.Error("NotReady is not significant")
	}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "1"}}
	s2 := s.DeepCopy()
	s2.ResourceVersion = "2"
	if significant(s, s2) {
		t.Error("a resourceVersion bump is significant")
	}
	s2.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	if !significant(s, s2) {
		t.Error("ingress is not significant")
	}
}
