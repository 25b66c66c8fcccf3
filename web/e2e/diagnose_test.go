package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// diagnose logs what the lab itself says when a test failed: the
// controllers' status, the CCM's DaemonSet, its Pods and its Lease. A
// switch that never showed its new state is told apart this way: a
// request that never came, a roll that did not finish, or a process that
// leads with other flags.
func (l *lab) diagnose(t testing.TB) {
	t.Helper()
	var b strings.Builder
	if res, err := http.Get("http://" + l.addr + "/api/controllers"); err == nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Fprintf(&b, "GET /api/controllers: %s %s\n", res.Status, strings.TrimSpace(string(body)))
	} else {
		fmt.Fprintf(&b, "GET /api/controllers: %v\n", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig())
	if err != nil {
		t.Logf("lab diagnosis:\n%skubeconfig: %v", b.String(), err)
		return
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Logf("lab diagnosis:\n%sclient: %v", b.String(), err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if dss, err := c.AppsV1().DaemonSets("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, ds := range dss.Items {
			args := []string{}
			for _, ctr := range ds.Spec.Template.Spec.Containers {
				args = append(args, ctr.Args...)
			}
			fmt.Fprintf(&b, "daemonset %s gen %d observed %d updated %d ready %d args %v\n", ds.Name, ds.Generation, ds.Status.ObservedGeneration,
				ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady, args)
		}
	}
	if pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			if !strings.Contains(p.Name, "cloud-controller-manager") {
				continue
			}
			args := []string{}
			for _, ctr := range p.Spec.Containers {
				for _, a := range ctr.Args {
					if strings.HasPrefix(a, "--controllers") {
						args = append(args, a)
					}
				}
			}
			fmt.Fprintf(&b, "pod %s phase %s deleting %v node %s created %s %v\n", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, p.Spec.NodeName,
				p.CreationTimestamp.Format(time.RFC3339), args)
		}
	}
	if leases, err := c.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, le := range leases.Items {
			if le.Spec.HolderIdentity == nil || strings.HasPrefix(le.Name, "kube-") {
				continue
			}
			fmt.Fprintf(&b, "lease %s holder %s renewed %v\n", le.Name, *le.Spec.HolderIdentity, le.Spec.RenewTime)
		}
	}
	t.Logf("lab diagnosis:\n%s", b.String())
}
