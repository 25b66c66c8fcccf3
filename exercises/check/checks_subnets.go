package check

import (
	"context"
	"slices"
	"strings"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// Checks of the subnet-tags lesson: which subnets cloud-provider-aws
// v1.37.1 takes as candidates for a load balancer, and where the Service's
// Classic ELB landed. The provider's rule (findSubnets, aws.go:1648-1682;
// hasClusterTag and hasNoClusterPrefixTag, tags.go:137-195): a subnet of
// the VPC is a candidate when it carries this cluster's
// kubernetes.io/cluster/<id> tag, or no kubernetes.io/cluster/ tag at all.
// Only a subnet tagged for another cluster, and not for this one, drops
// out; when none is left, the provider falls back to the subnet its cloud
// config names (the CCM's own), with a warning in its log.

// subnetsKinds is this file's part of the kinds table (checks_extra.go).
func subnetsKinds() map[string]checkKind {
	return map[string]checkKind{
		"subnetCandidates": {params: []string{"!state"}, enum: map[string][]string{"state": {"none", "all"}}, eval: evalSubnetCandidates},
		"elbSubnets":       {params: []string{"!name", "!state"}, enum: map[string][]string{"state": {"one", "every-zone"}}, eval: evalELBSubnets},
	}
}

// subnetsAnswerKinds is this file's part of the answer kinds.
func subnetsAnswerKinds() map[string]answerKind {
	return map[string]answerKind{
		"elbSubnet": {name: true, values: answerELBSubnet},
	}
}

// subnetCandidate says whether cloud-provider-aws would take a subnet with
// these tags as a load balancer candidate, and why, as findSubnets decides.
func subnetCandidate(tags map[string]string, ownKey string) (bool, string) {
	if _, ok := tags[ownKey]; ok {
		return true, ownKey
	}
	for k := range tags {
		if strings.HasPrefix(k, "kubernetes.io/cluster/") {
			return false, k
		}
	}
	return true, ""
}

func evalSubnetCandidates(_ context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	own := e.env.Cloud.ClusterTagKey()
	var in, out []string
	var untagged, ownTagged []string
	for _, s := range e.env.Cloud.AWSNetworkInfo().Subnets {
		ok, why := subnetCandidate(s.Tags, own)
		switch {
		case ok && why == "":
			untagged = append(untagged, s.ID)
			in = append(in, s.ID)
		case ok:
			ownTagged = append(ownTagged, s.ID)
			in = append(in, s.ID)
		default:
			out = append(out, s.ID)
		}
	}
	if c.State == "none" {
		if len(in) == 0 {
			return passf("どのサブネットも別のクラスタ用のタグだけを持ち、cloud-provider-aws の候補から外れています (%s)",
				"every subnet carries only another cluster's tag and is out of cloud-provider-aws's candidates (%s)", strings.Join(out, ", "))
		}
		if len(ownTagged) > 0 {
			return failf("サブネット %s にはまだこのクラスタのタグ %s があり、cloud-provider-aws はそれを使います。",
				"subnet %s still carries this cluster's tag %s, so cloud-provider-aws still uses it, whatever other cluster's tag is beside it.",
				strings.Join(ownTagged, ", "), own)
		}
		return failf("サブネット %s には kubernetes.io/cluster/ のタグが 1 つもないため、cloud-provider-aws はどのクラスタのものでもないとみなして使います。",
			"subnet %s carries no kubernetes.io/cluster/ tag at all, so cloud-provider-aws takes it as nobody's and uses it.",
			strings.Join(untagged, ", "))
	}
	if len(out) == 0 {
		return passf("すべてのサブネット (%d 個) が、また cloud-provider-aws の候補です", "all %d subnets are cloud-provider-aws's candidates again", len(in))
	}
	return failf("サブネット %s は別のクラスタ用のタグだけを持ち、まだ候補から外れています (このクラスタのタグ %s がありません)。",
		"subnet %s still carries only another cluster's tag and stays out of the candidates (no tag %s of this cluster on it).",
		strings.Join(out, ", "), own)
}

// elbWithSubnets is the Service's Classic ELB with its subnets.
func (e *evalCtx) elbWithSubnets(ctx context.Context, name string) (cloud.LoadBalancer, Outcome, bool) {
	lb, o, ok := e.serviceLB(ctx, name)
	if !ok {
		return lb, o, false
	}
	if len(lb.Subnets) == 0 {
		return lb, failf("Service %s のロードバランサーにはまだサブネットがありません。", "Service %s's load balancer has no subnet yet.", name), false
	}
	return lb, Outcome{}, true
}

func evalELBSubnets(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome {
	lb, o, ok := e.elbWithSubnets(ctx, c.Name)
	if !ok {
		return o
	}
	var zones []string
	for _, s := range e.env.Cloud.AWSNetworkInfo().Subnets {
		if !slices.Contains(zones, s.Zone) {
			zones = append(zones, s.Zone)
		}
	}
	have := strings.Join(lb.Subnets, ", ")
	switch {
	case c.State == "one" && len(lb.Subnets) == 1:
		return passf("Service %s の ELB はサブネット 1 つ (%s) だけにあります", "Service %s's ELB is in one subnet only (%s)", c.Name, have)
	case c.State == "one":
		return failf("Service %s の ELB はまだ %d 個のサブネット (%s) にあります。サブネットのタグを変える前に作られた ELB は、Service が更新されるまでそのままです。",
			"Service %s's ELB is still in %d subnets (%s). An ELB made before the subnets' tags changed stays as it is until its Service is updated.", c.Name, len(lb.Subnets), have)
	case len(lb.Subnets) == len(zones):
		return passf("Service %s の ELB は %d つのゾーンすべてのサブネットにあります", "Service %s's ELB is in a subnet of each of the %d zones", c.Name, len(zones))
	default:
		return failf("Service %s の ELB は %d 個のサブネット (%s) にあり、ゾーンは %d つあります。cloud-provider-aws は Service が更新されたときにサブネットを付け直します (たとえば注釈を 1 つ変える)。",
			"Service %s's ELB is in %d subnets (%s) of %d zones. cloud-provider-aws attaches subnets again when the Service is updated (change an annotation, for instance).", c.Name, len(lb.Subnets), have, len(zones))
	}
}

func answerELBSubnet(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	lb, o, ok := e.elbWithSubnets(ctx, a.Name)
	if !ok {
		return nil, o
	}
	if len(lb.Subnets) != 1 {
		return nil, failf("Service %s の ELB はまだ %d 個のサブネットにあります。1 つになってから読んでください。",
			"Service %s's ELB is in %d subnets yet: read it once it is in one.", a.Name, len(lb.Subnets))
	}
	return lb.Subnets, Outcome{}
}
