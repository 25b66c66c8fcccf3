package check

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/flow"
)

// Checks of Services: EXTERNAL-IP, events, answers through the data plane
// and the six-step flow.

// ---- services ----

func evalServiceExternalIP(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return failf("Service %s の type は %s です (LoadBalancer ではありません)。", "Service %s is of type %s, not LoadBalancer.", c.Name, svc.Spec.Type)
	}
	in := ingressOf(svc)
	if c.State == "pending" {
		if in != "" {
			return failf("EXTERNAL-IP は %s で、<pending> ではありません。", "EXTERNAL-IP is %s, not <pending>.", in)
		}
		return passf("EXTERNAL-IP は <pending>: status.loadBalancer.ingress が空です", "EXTERNAL-IP is <pending>: status.loadBalancer.ingress is empty")
	}
	if in == "" {
		return failf("EXTERNAL-IP はまだ <pending> です。", "EXTERNAL-IP is still <pending>.")
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	if in != lb.DNSName && in != lb.IP {
		return failf("EXTERNAL-IP %s がクラウドのロードバランサー %s (%s) と一致しません。", "EXTERNAL-IP %s does not match load balancer %s (%s).", in, lb.Name, cmp.Or(lb.DNSName, lb.IP))
	}
	return passf("EXTERNAL-IP %s (ロードバランサー %s)", "EXTERNAL-IP %s (load balancer %s)", in, lb.Name)
}

func evalServiceClass(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	got := ptrString(svc.Spec.LoadBalancerClass)
	if got != c.Class {
		return failf("spec.loadBalancerClass は %q です (%q のはず)。", "spec.loadBalancerClass is %q, expected %q.", got, c.Class)
	}
	return passf("spec.loadBalancerClass = %s", "spec.loadBalancerClass = %s", got)
}

func evalServiceEvents(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	evs, err := e.events(ctx, svc)
	if err != nil {
		return errOutcome(err)
	}
	var found []string
	for _, r := range c.Reasons {
		hit := false
		for _, ev := range evs {
			if ev.Reason == r && (c.Message == "" || strings.Contains(ev.Message, c.Message)) {
				hit = true
				found = append(found, r)
				break
			}
		}
		if !hit {
			if c.Message != "" {
				return failf("Service %[1]s に、%[3]q を含むイベント %[2]s がありません。", "Service %s has no %s event mentioning %q.", c.Name, r, c.Message)
			}
			return failf("Service %s にイベント %s がありません。", "Service %s has no %s event.", c.Name, r)
		}
	}
	return passf("イベント: %s", "events: %s", strings.Join(found, ", "))
}

func evalNoControllerEvents(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	all, err := e.events(ctx, svc)
	if err != nil {
		return errOutcome(err)
	}
	// The apiserver's own repair loops (ClusterIP, NodePort) may report on
	// a brand-new Service; they are not a controller watching it for a
	// load balancer.
	evs := slices.DeleteFunc(all, func(ev corev1.Event) bool {
		return strings.HasSuffix(cmp.Or(ev.ReportingController, ev.Source.Component), "-repair-controller")
	})
	if len(evs) > 0 {
		return failf("Service %s にはイベント %s (%s) があります: 誰かが見ています。", "Service %s has event %s from %s: someone is watching it.", c.Name, evs[0].Reason, cmp.Or(evs[0].ReportingController, evs[0].Source.Component))
	}
	return passf("Service %s にコントローラーからのイベントはありません", "Service %s has no events from a controller", c.Name)
}

func evalServiceFlow(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	key := format.Namespace + "/" + c.Name
	f, ok := e.env.Flow.ServiceFlow(key)
	if !ok {
		return failf("Service %s のフローがまだありません。", "no flow for Service %s yet.", c.Name)
	}
	if c.Step > 0 && f.Step < c.Step {
		return failf("フローはステップ %d までです (%d が必要)。", "the flow is at step %d, step %d needed.", f.Step, c.Step)
	}
	if c.Reason != "" {
		if f.Stuck == nil || f.Stuck.Reason != c.Reason {
			got := "none"
			if f.Stuck != nil {
				got = f.Stuck.Reason
			}
			return failf("フローの止まっている理由は %s です (%s のはず)。", "the flow's stuck reason is %s, expected %s.", got, c.Reason)
		}
		why := flow.StuckText(f.Stuck) // the flow's own words, in both languages
		return Outcome{true, i18n.Text{
			// f.Step is the last step done; the stuck one is the next.
			JA: fmt.Sprintf("フローはステップ %d まで進み、ステップ %d で止まっています: %s", f.Step, f.Step+1, why.JA),
			EN: fmt.Sprintf("the flow is stuck after step %d: %s", f.Step, why.EN),
		}}
	}
	return passf("フローはステップ %d まで進みました", "the flow reached step %d", f.Step)
}
