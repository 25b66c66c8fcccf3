//go:build !unit

package exercises

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// annotateShop merges annotations into shop as kubectl annotate would
// (a nil value removes one).
func annotateShop(t *testing.T, annotations map[string]any) {
	t.Helper()
	var parts []string
	for k, v := range annotations {
		val := "null"
		if s, ok := v.(string); ok {
			val = `"` + s + `"`
		}
		parts = append(parts, `"`+k+`":`+val)
	}
	patch := `{"metadata":{"annotations":{` + strings.Join(parts, ",") + `}}}`
	_, err := env.Client.CoreV1().Services("default").Patch(context.Background(), MysteryService, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	must(t, err)
}

// shopLB is the load balancer shop's status names, once it names one
// other than not.
func (w *world) shopLB(t *testing.T, not string, timeout time.Duration) *cloud.LoadBalancer {
	t.Helper()
	return w.lbByDNS(t, w.hostnameOf(t, MysteryService, not, timeout))
}

// sendTo sends one request through a load balancer as the page's request
// panel does.
func (w *world) sendTo(t *testing.T, lb string) dataplane.Trace {
	t.Helper()
	tr, err := w.dp.Do(context.Background(), dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: lb})
	if err != nil {
		return dataplane.Trace{Error: err.Error()}
	}
	return tr
}

// The diagnosis challenge's controller causes (mystery_lbc.go): after the
// reset the symptom is there and no step passes; the right name passes
// the first step; the fix a student makes, then a request the test sends
// as the student, passes the second.
func TestMysteryControllerCauses(t *testing.T) {
	w := theWorld(t)
	ctx := context.Background()
	for _, tc := range []struct {
		cause string
		need  func(t *testing.T)
		// symptom checks the broken state beyond the reset's own wait.
		symptom func(t *testing.T)
		fix     func(t *testing.T) (lb string)
	}{
		{cause: CauseExternalNoTargetType,
			need: func(t *testing.T) {
				// The served world runs cloud-provider-aws: a world that
				// does not would leave the cause untested, so it fails.
				if !upstreamAWS(ctx, w.svc) {
					t.Fatalf("the world's profile %q runs no cloud-provider-aws", w.svc.cfg.Env.Profile.Name)
				}
			},
			symptom: func(t *testing.T) {
				svc := w.service(t, MysteryService)
				if svc.Spec.LoadBalancerClass != nil || svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] != "external" {
					t.Fatalf("shop: class %v annotations %v", svc.Spec.LoadBalancerClass, svc.Annotations)
				}
				// Nobody builds anything: no load balancer is tagged for shop.
				for _, lb := range w.cloud.LoadBalancerViews() {
					if lb.Tags["kubernetes.io/service-name"] == "default/shop" || lb.Tags["service.k8s.aws/stack"] == "default/shop" {
						t.Fatalf("a load balancer was built for shop: %s", lb.Name)
					}
				}
			},
			fix: func(t *testing.T) string {
				// kubectl annotate svc shop service.beta.kubernetes.io/aws-load-balancer-type-
				annotateShop(t, map[string]any{"service.beta.kubernetes.io/aws-load-balancer-type": nil})
				lb := w.shopLB(t, "", 90*time.Second)
				if lb.Kind != cloud.LBKindClassic {
					t.Fatalf("shop's load balancer after the fix is %q, want the CCM's Classic ELB", lb.Kind)
				}
				return lb.Name
			}},
		{cause: CauseInternalByDefault,
			need: func(t *testing.T) { needRealLBC(t) },
			symptom: func(t *testing.T) {
				lb := w.shopLB(t, "", 10*time.Second)
				if lb.Kind != cloud.LBKindNetwork || lb.Scheme != cloud.SchemeInternal {
					t.Fatalf("shop's load balancer %s: kind %q scheme %q", lb.Name, lb.Kind, lb.Scheme)
				}
				// A request answered from the page does not make the
				// internal NLB reachable from outside: fix still fails.
				w.sendTo(t, lb.Name)
				if r := stepOf(w.check(t, MysteryID), "fix"); r.Status == StepPassed {
					t.Fatalf("fix passed on an internal NLB: %s", describe(r))
				}
			},
			fix: func(t *testing.T) string {
				old := w.hostnameOf(t, MysteryService, "", 10*time.Second)
				// kubectl annotate svc shop service.beta.kubernetes.io/aws-load-balancer-scheme=internet-facing
				annotateShop(t, map[string]any{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"})
				lb := w.shopLB(t, old, 120*time.Second)
				if lb.Scheme != cloud.SchemeInternetFacing {
					t.Fatalf("shop's new NLB %s is %s", lb.Name, lb.Scheme)
				}
				return lb.Name
			}},
	} {
		t.Run(tc.cause, func(t *testing.T) {
			tc.need(t)
			must(t, w.svc.ResetWith(ctx, MysteryID, ResetOptions{Cause: tc.cause}))
			t.Cleanup(func() { w.restore(t, MysteryID) })
			w.expectFailFirst(t, MysteryID)
			tc.symptom(t)

			v, err := w.svc.NameCause(ctx, MysteryID, tc.cause, "ja")
			must(t, err)
			if !v.Named || v.Correct == nil || !*v.Correct || v.Cause != tc.cause || v.Why == "" {
				t.Fatalf("after naming: %+v", v)
			}
			w.waitStep(t, MysteryID, "name-cause", 5*time.Second)

			lb := tc.fix(t)
			testutil.Eventually(t, 90*time.Second, "a request through "+lb+" answered", func() (bool, string) {
				tr := w.sendTo(t, lb)
				return tr.Status == 200, tr.Error
			})
			w.waitStep(t, MysteryID, "fix", 10*time.Second)
			w.expectDone(t, MysteryID)
		})
	}
}

// A wrong name for a controller cause gets its own nudge.
func TestMysteryControllerNudges(t *testing.T) {
	for _, id := range []string{CauseExternalNoTargetType, CauseInternalByDefault} {
		if n, ok := lbcNudges()[id]; !ok || n.JA == "" || n.EN == "" {
			t.Errorf("%s has no nudge", id)
		}
		if causeIndex(id) < 0 {
			t.Errorf("%s is not among the causes", id)
		}
	}
}
