//go:build !unit

package exercises

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// The subnet-tags lesson on the served lab: cloud-provider-aws v1.37.1
// leaves out subnets tagged only for another cluster, falls back to the
// subnet its cloud config names with a warning in the CCM Pod's log, and
// attaches the subnets again once the tags are back and the Service is
// updated.
func TestExerciseSubnetTags(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	cli := cloud.WithCaller(ctx, "aws-cli")
	const id = "subnet-tags"
	w.reset(t, id)
	w.expectFailFirst(t, id)

	net := w.cloud.AWSNetworkInfo()
	var ids []string
	for _, s := range net.Subnets {
		ids = append(ids, s.ID)
	}
	own := w.cloud.ClusterTagKey()
	other := map[string]string{"kubernetes.io/cluster/other": "owned"}

	// Another cluster's tag beside this one's takes no subnet out.
	w.failsNow(t, id, "tag-other")
	must(t, w.cloud.CreateTags(cli, ids, other))
	w.failsNow(t, id, "tag-other")
	must(t, w.cloud.DeleteTags(cli, ids, []string{own}))
	w.waitStep(t, id, "tag-other", 10*time.Second)

	w.failsNow(t, id, "expose")
	w.run(t, id, "expose", "create deployment")
	w.run(t, id, "expose", "expose deployment")
	w.waitStep(t, id, "expose", 90*time.Second)

	// The provider's own words, in the CCM Pod's log.
	testutil.Eventually(t, 30*time.Second, "the fallback warning in the CCM Pod's log", func() (bool, string) {
		pods, err := env.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=aws-cloud-controller-manager"})
		if err != nil || len(pods.Items) == 0 {
			return false, "no CCM Pod"
		}
		for _, p := range pods.Items {
			raw, err := env.Client.CoreV1().Pods("kube-system").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			// klog.Warningf (aws.go:1671): a W line, as the exercise's hint says.
			for _, l := range strings.Split(string(raw), "\n") {
				if err == nil && strings.HasPrefix(l, "W") && strings.Contains(l, "No tagged subnets found; will fall-back to the current subnet only") {
					return true, ""
				}
			}
		}
		if len(pods.Items) > 0 {
			raw, _ := env.Client.CoreV1().Pods("kube-system").GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			var lines []string
			for _, l := range strings.Split(string(raw), "\n") {
				if strings.Contains(strings.ToLower(l), "subnet") || strings.Contains(l, "aws.go") {
					lines = append(lines, l)
				}
			}
			return false, fmt.Sprintf("not logged (%d bytes; lines on subnets or from aws.go: %q)", len(raw), lines)
		}
		return false, "not logged"
	})

	svc := w.service(t, "subnet-web")
	lb, ok := w.cloud.LookupLoadBalancer(cloudprovider.DefaultLoadBalancerName(svc))
	if !ok || len(lb.Subnets) != 1 || lb.Subnets[0] != net.Subnets[0].ID {
		t.Fatalf("subnet-web's ELB is in %v, want the cloud config's subnet %s alone", lb.Subnets, net.Subnets[0].ID)
	}
	w.failsNow(t, id, "which-subnet")
	if res := w.answer(t, id, "which-subnet", net.Subnets[1].ID); res.Correct {
		t.Fatalf("a subnet the ELB is not in passed: %+v", res)
	}
	if res := w.answer(t, id, "which-subnet", lb.Subnets[0]); !res.Correct {
		t.Fatalf("the ELB's subnet %s: %+v", lb.Subnets[0], res)
	}
	w.waitStep(t, id, "which-subnet", 5*time.Second)

	// Tags back alone change no ELB: the Service controller does not watch
	// tags; the annotation makes it call EnsureLoadBalancer.
	w.failsNow(t, id, "restore")
	must(t, w.cloud.CreateTags(cli, ids, map[string]string{own: "owned"}))
	must(t, w.cloud.DeleteTags(cli, ids, []string{"kubernetes.io/cluster/other"}))
	w.failsNow(t, id, "restore")
	w.run(t, id, "restore", "kubectl annotate")
	w.waitStep(t, id, "restore", 90*time.Second)
	w.expectDone(t, id)

	// A reset puts the tags back whatever the student left.
	must(t, w.cloud.DeleteTags(cli, ids, []string{own}))
	w.reset(t, id)
	for _, s := range w.cloud.AWSNetworkInfo().Subnets {
		if s.Tags[own] != "owned" {
			t.Errorf("subnet %s after reset: %v", s.ID, s.Tags)
		}
	}
}
