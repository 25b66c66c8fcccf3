package check

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Checks of the cloud side: controller switches and faults, load balancers
// and their targets, health checks and traffic, routes.

// ---- switches and faults ----

func evalControllerEnabled(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	on, ok := e.env.Controllers.Status()[c.Controller]
	if !ok {
		return failf("このラボには %s controller がありません。", "this lab has no %s controller.", c.Controller)
	}
	word := func(b bool) (string, string) {
		if b {
			return "オン", "on"
		}
		return "オフ", "off"
	}
	onJA, onEN := word(on)
	if want := *c.Enabled; on != want {
		wantJA, wantEN := word(want)
		return Outcome{false, i18n.Text{
			JA: fmt.Sprintf("%s controller は%sです (%sにしてください)。", c.Controller, onJA, wantJA),
			EN: fmt.Sprintf("the %s controller is %s; switch it %s.", c.Controller, onEN, wantEN),
		}}
	}
	return Outcome{true, i18n.Text{
		JA: fmt.Sprintf("%s controller は%sです", c.Controller, onJA),
		EN: fmt.Sprintf("the %s controller is %s", c.Controller, onEN),
	}}
}

func evalCloudDeny(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	denied := slices.Contains(e.env.Cloud.Faults().Deny, c.Action)
	if denied != *c.Denied {
		if denied {
			return failf("IAM はまだ %s を拒否しています。", "IAM still denies %s.", c.Action)
		}
		return failf("IAM は %s を拒否していません。", "IAM does not deny %s.", c.Action)
	}
	if denied {
		return passf("IAM が %s を拒否しています", "IAM denies %s", c.Action)
	}
	return passf("IAM は %s を許可しています", "IAM allows %s", c.Action)
}

// ---- load balancers ----

func evalLBTargets(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	if string(lb.TargetType) != c.Mode {
		return failf("ロードバランサー %s は %s モードです (%s のはず)。", "load balancer %s is in %s mode, expected %s.", lb.Name, lb.TargetType, c.Mode)
	}
	if len(lb.Targets) == 0 {
		return failf("ロードバランサー %s にターゲットがありません。", "load balancer %s has no targets.", lb.Name)
	}
	var ids []string
	for _, t := range lb.Targets {
		ids = append(ids, fmt.Sprintf("%s:%d", t.ID, t.Port))
	}
	if c.Mode == "ip" {
		eps, err := e.readyEndpoints(ctx, svc)
		if err != nil {
			return errOutcome(err)
		}
		want := map[string]bool{}
		for _, ep := range eps {
			want[ep.IP] = true
		}
		got := map[string]bool{}
		for _, t := range lb.Targets {
			got[t.ID] = true
		}
		if len(want) == 0 || !reflect.DeepEqual(want, got) {
			return failf("ターゲット %s が Pod の IP %v と一致しません。", "targets %s do not match the Pod IPs %v.", strings.Join(ids, " "), keys(want))
		}
		return passf("ip モード: ターゲットは Pod の IP %s", "ip mode: the targets are the Pod IPs %s", strings.Join(ids, " "))
	}
	var nodePort int32
	if len(svc.Spec.Ports) > 0 {
		nodePort = svc.Spec.Ports[0].NodePort
	}
	for _, t := range lb.Targets {
		inst, ok := e.env.Cloud.LookupInstance(t.ID)
		if !ok {
			return failf("ターゲット %s は VM ではありません。", "target %s is not an instance.", t.ID)
		}
		if t.Port != nodePort {
			return failf("ターゲット %s のポート %d が NodePort %d ではありません。", "target %s uses port %d, not the NodePort %d.", inst.ID, t.Port, nodePort)
		}
	}
	return passf("instance モード: ターゲットは各ノードの NodePort %d (%s)", "instance mode: the targets are the nodes on NodePort %d (%s)", nodePort, strings.Join(ids, " "))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// localCounts maps node name -> ready endpoints of svc on it.
func localCounts(eps []endpoint) map[string]int {
	m := map[string]int{}
	for _, ep := range eps {
		m[ep.Node]++
	}
	return m
}

func (e *evalCtx) localService(ctx context.Context, name string) (*corev1.Service, cloud.LoadBalancer, map[string]int, Outcome, bool) {
	svc, o, ok := e.service(ctx, name)
	if !ok {
		return nil, cloud.LoadBalancer{}, nil, o, false
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil, cloud.LoadBalancer{}, nil, failf("externalTrafficPolicy が Local ではありません。", "externalTrafficPolicy is not Local."), false
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return nil, cloud.LoadBalancer{}, nil, o, false
	}
	eps, err := e.readyEndpoints(ctx, svc)
	if err != nil {
		return nil, cloud.LoadBalancer{}, nil, errOutcome(err), false
	}
	return svc, lb, localCounts(eps), Outcome{}, true
}

func evalHealthChecksFollowPods(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	svc, lb, counts, o, ok := e.localService(ctx, c.Name)
	if !ok {
		return o
	}
	if lb.HealthCheck == nil || lb.HealthCheck.Port != svc.Spec.HealthCheckNodePort {
		return failf("ヘルスチェックが healthCheckNodePort %d を見ていません。", "the health check does not probe healthCheckNodePort %d.", svc.Spec.HealthCheckNodePort)
	}
	var healthy, unhealthy []string
	for _, t := range lb.Targets {
		if t.Health == cloud.TargetUnused {
			continue
		}
		inst, ok := e.env.Cloud.LookupInstance(t.ID)
		if !ok {
			continue
		}
		node := inst.PrivateDNSName
		want := cloud.TargetUnhealthy
		if counts[node] > 0 {
			want = cloud.TargetHealthy
		}
		if t.Health != want {
			return failf("%s (Pod %d 個) のターゲットは %s です (%s になるはず)。少し待ってもう一度。", "the target on %s (%d local Pods) is %s, should be %s; wait a moment.", node, counts[node], t.Health, want)
		}
		if want == cloud.TargetHealthy {
			healthy = append(healthy, node)
		} else {
			unhealthy = append(unhealthy, node)
		}
	}
	if len(unhealthy) == 0 {
		return failf("Pod のいないノードがありません: すべてのターゲットが healthy です。", "every node has a Pod, so every target is healthy.")
	}
	if len(healthy) == 0 {
		return failf("healthy なターゲットがありません。", "no target is healthy.")
	}
	return passf("Pod のいるノード (%s) は healthy、いないノード (%s) は unhealthy (port %d)", "nodes with a Pod (%s) are healthy, nodes without (%s) unhealthy (port %d)",
		strings.Join(healthy, ", "), strings.Join(unhealthy, ", "), svc.Spec.HealthCheckNodePort)
}

func evalUnevenLoad(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	_, lb, counts, o, ok := e.localService(ctx, c.Name)
	if !ok {
		return o
	}
	// The load balancer splits evenly over its healthy targets; each node
	// splits its share over its own Pods.
	var nodes []string
	for _, t := range lb.Targets {
		if t.Health != cloud.TargetHealthy {
			continue
		}
		if inst, ok := e.env.Cloud.LookupInstance(t.ID); ok && counts[inst.PrivateDNSName] > 0 {
			nodes = append(nodes, inst.PrivateDNSName)
		}
	}
	if len(nodes) < 2 {
		return failf("Pod のいる healthy なノードが %d 個しかありません。", "only %d healthy node(s) with Pods.", len(nodes))
	}
	var parts []string
	hi, lo := 0.0, 1.0
	for _, n := range nodes {
		share := 1 / float64(len(nodes)) / float64(counts[n])
		hi, lo = max(hi, share), min(lo, share)
		parts = append(parts, fmt.Sprintf("%s: %d Pod × %.0f%%", n, counts[n], share*100))
	}
	if hi/lo < 1.5 {
		return failf("Pod あたりの負荷は均等です (%s)。", "the load per Pod is even (%s).", strings.Join(parts, ", "))
	}
	return passf("Pod あたりの負荷が偏っています: %s", "the load per Pod is uneven: %s", strings.Join(parts, ", "))
}

// ---- routes ----

func (e *evalCtx) routesByCIDR() map[string]cloud.Route {
	m := map[string]cloud.Route{}
	for _, r := range e.env.Cloud.Snapshot().Routes {
		m[r.DestinationCIDR] = r
	}
	return m
}

func routeActive(c *cloud.Cloud, r cloud.Route) bool {
	inst, ok := c.LookupInstance(r.InstanceID)
	return ok && inst.State == cloud.InstanceRunning
}

func evalRouteForEveryNode(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	routes := e.routesByCIDR()
	nodes, o, ok := e.selectNodes(ctx, c.Nodes)
	if !ok {
		return o
	}
	var rows []string
	for _, n := range nodes {
		inst, ok := e.instanceOf(&n)
		if !ok || inst.State != cloud.InstanceRunning {
			continue // its VM is gone; the Node will be
		}
		if n.Spec.PodCIDR == "" {
			return failf("Node %s に podCIDR がまだありません。", "Node %s has no podCIDR yet.", n.Name)
		}
		r, ok := routes[n.Spec.PodCIDR]
		if !ok {
			return failf("ルートテーブルに %s (Node %s) の行がありません。", "the route table has no row for %s (Node %s).", n.Spec.PodCIDR, n.Name)
		}
		if r.InstanceID != inst.ID || !routeActive(e.env.Cloud, r) {
			return failf("%s の行は %s を指していて active ではありません。", "the row for %s points at %s and is not active.", n.Spec.PodCIDR, r.InstanceID)
		}
		rows = append(rows, n.Spec.PodCIDR+" → "+inst.ID)
	}
	if len(rows) == 0 {
		return failf("動いている VM の Node がありません。", "no Node on a running VM.")
	}
	return passf("各 Node の podCIDR に経路があります: %s", "every Node's podCIDR has a route: %s", strings.Join(rows, ", "))
}

func evalNodeWithoutRoute(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	routes := e.routesByCIDR()
	return e.forEachNode(ctx, c.Nodes, "podCIDR はありますが、経路はまだありません", "has a podCIDR but no route yet",
		func(n *corev1.Node) (string, string) {
			if n.Spec.PodCIDR == "" {
				return "podCIDR がまだありません", "has no podCIDR yet"
			}
			if _, ok := routes[n.Spec.PodCIDR]; ok {
				return fmt.Sprintf("%s の経路がもうあります (Route controller が動いています)", n.Spec.PodCIDR), fmt.Sprintf("a route for %s already exists (the Route controller is running)", n.Spec.PodCIDR)
			}
			return "", ""
		})
}

func evalNoStaleRoutes(ctx context.Context, e *evalCtx, _ format.CheckSpec) Outcome {
	nodes, err := e.listNodes(ctx)
	if err != nil {
		return errOutcome(err)
	}
	owner := map[string]string{} // podCIDR -> node
	for _, n := range nodes {
		if n.Spec.PodCIDR != "" {
			owner[n.Spec.PodCIDR] = n.Name
		}
	}
	routes := e.env.Cloud.Snapshot().Routes
	for _, r := range routes {
		node, ok := owner[r.DestinationCIDR]
		if !ok {
			return failf("行 %s → %s に対応する Node がありません。", "row %s → %s belongs to no Node.", r.DestinationCIDR, r.InstanceID)
		}
		if !routeActive(e.env.Cloud, r) {
			return failf("行 %s → %s (Node %s) の VM は動いていません (blackhole)。", "row %s → %s (Node %s) points at a VM that is not running (blackhole).", r.DestinationCIDR, r.InstanceID, node)
		}
	}
	return passf("ルートテーブルの %d 行はどれも動いている Node のものです", "all %d rows of the route table belong to running Nodes", len(routes))
}
