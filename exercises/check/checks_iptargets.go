package check

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Checks of the ip-targets-routes lesson. An NLB in ip mode sends to Pod
// IPs itself, with no node in between; it reaches an IP the VPC owns, or
// one a VPC route covers. On the aws profile Pod IPs are not VPC addresses:
// only the Route controller's podCIDR -> instance rows make them reachable,
// and the NLB's health checks turn a target without its row unhealthy.

// ipTargetKinds is this file's part of the kinds table (checks_extra.go).
func ipTargetKinds() map[string]checkKind {
	return map[string]checkKind{
		"ipTargetsReached": {params: []string{"!name", "!state"}, enum: map[string][]string{"state": {"cut", "all"}}, eval: evalIPTargetsReached},
	}
}

// coveredBy says how the VPC reaches ip: "vpc" for an address of the VPC
// itself, the route's destination for one a route covers, "" for neither.
func coveredBy(ip string, vpcCIDR string, routes []cloud.Route) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	if p, err := netip.ParsePrefix(vpcCIDR); err == nil && p.Contains(addr) {
		return "vpc"
	}
	for _, r := range routes {
		if p, err := netip.ParsePrefix(r.DestinationCIDR); err == nil && p.Contains(addr) && r.State != cloud.RouteBlackhole {
			return r.DestinationCIDR
		}
	}
	return ""
}

// evalIPTargetsReached: state "cut" passes when a target of the Service's
// ip-mode load balancer is unhealthy because no route covers its IP;
// "all" when every target is healthy and reachable.
func evalIPTargetsReached(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	lb, o, ok := e.serviceLB(ctx, c.Name)
	if !ok {
		return o
	}
	if lb.TargetType != cloud.TargetTypeIP {
		return failf("ロードバランサー %s のターゲットは %s モードです。この演習は ip モード (Pod の IP がターゲット) の Service で行います。",
			"load balancer %s is in %s mode; this exercise needs a Service in ip mode (the Pod IPs as targets).", lb.Name, lb.TargetType)
	}
	if len(lb.Targets) == 0 {
		return failf("ロードバランサー %s にターゲットがまだありません。", "load balancer %s has no targets yet.", lb.Name)
	}
	vpc := e.env.Cloud.AWSNetworkInfo().CIDR
	routes := e.env.Cloud.Routes()
	var cut, reached, waiting []string
	for _, t := range lb.Targets {
		target := fmt.Sprintf("%s:%d", t.ID, t.Port)
		via := coveredBy(t.ID, vpc, routes)
		switch {
		case via == "" && t.Health == cloud.TargetUnhealthy:
			cut = append(cut, target)
		case via != "" && t.Health == cloud.TargetHealthy:
			reached = append(reached, target+" ("+via+")")
		default:
			waiting = append(waiting, fmt.Sprintf("%s %s", target, t.Health))
		}
	}
	if c.State == "cut" {
		if len(cut) > 0 {
			return passf("経路のないターゲット %s はヘルスチェックに落ち、unhealthy です",
				"target %s has no route and fails its health checks: unhealthy", strings.Join(cut, ", "))
		}
		return failf("ロードバランサー %s のどのターゲットにも、まだ届く道があります (%s)。",
			"every target of load balancer %s can still be reached (%s).",
			lb.Name, strings.Join(append(reached, waiting...), ", "))
	}
	if len(cut) == 0 && len(waiting) == 0 {
		return passf("すべてのターゲットに経路があり、healthy です: %s", "every target has a way in and is healthy: %s", strings.Join(reached, ", "))
	}
	return failf("まだ届かない、または healthy でないターゲットがあります: %s。経路は Route controller が作ります (オンになっていますか)。ヘルスチェックが通るまで数秒かかります。",
		"some targets are not reached or not healthy yet: %s. The Route controller makes the routes (is it on?); the health checks take a few seconds to pass.",
		strings.Join(append(cut, waiting...), ", "))
}
