//go:build unix

package kubelet

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func diagHandler(b *testing.B, m *Manager) {
	var mu sync.Mutex
	counts := map[string]int{}
	start := time.Now()
	m.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, nn any) {
		a, c := o.(*v1.Node), nn.(*v1.Node)
		key := fmt.Sprintf("t=%02ds ", int(time.Since(start).Seconds())/5*5)
		if !reflect.DeepEqual(a.Labels, c.Labels) { key += "labels " }
		if !reflect.DeepEqual(a.Annotations, c.Annotations) { key += "annotations " }
		if a.Spec.PodCIDR != c.Spec.PodCIDR { key += "podCIDR " }
		if !reflect.DeepEqual(a.Spec.Taints, c.Spec.Taints) { key += fmt.Sprintf("taints%d->%d ", len(a.Spec.Taints), len(c.Spec.Taints)) }
		if !reflect.DeepEqual(a.Status.Conditions, c.Status.Conditions) {
			key += "conds "
			if findCondition(c, v1.NodeReady).Status != v1.ConditionTrue { key += "READY=" + string(findCondition(c, v1.NodeReady).Status) + " " }
		}
		mu.Lock()
		counts[key]++
		mu.Unlock()
	}})
	b.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range counts {
			fmt.Println("UPDATES", k, v)
		}
	})
}
