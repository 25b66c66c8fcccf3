package check

import (
	"testing"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// elbIn gives Service name a Classic ELB in the first n subnets.
func (f *fixture) elbIn(name string, n int) []string {
	f.t.Helper()
	svc := f.svc(name)
	var subnets []string
	for _, s := range f.cloud.AWSNetworkInfo().Subnets[:n] {
		subnets = append(subnets, s.ID)
	}
	if _, err := f.cloud.CreateELB(f.ctx, cloud.CreateELBInput{Name: cloudprovider.DefaultLoadBalancerName(svc), Subnets: subnets,
		Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}}); err != nil {
		f.t.Fatal(err)
	}
	return subnets
}

// retag gives every subnet the tags add and takes keys del away.
func (f *fixture) retag(add map[string]string, del ...string) {
	f.t.Helper()
	var ids []string
	for _, s := range f.cloud.AWSNetworkInfo().Subnets {
		ids = append(ids, s.ID)
	}
	if len(add) > 0 {
		if err := f.cloud.CreateTags(f.ctx, ids, add); err != nil {
			f.t.Fatal(err)
		}
	}
	if len(del) > 0 {
		if err := f.cloud.DeleteTags(f.ctx, ids, del); err != nil {
			f.t.Fatal(err)
		}
	}
}

func subnetsCases() []checkCase {
	none := format.CheckSpec{Kind: "subnetCandidates", State: "none"}
	all := format.CheckSpec{Kind: "subnetCandidates", State: "all"}
	one := format.CheckSpec{Kind: "elbSubnets", Name: "sn", State: "one"}
	every := format.CheckSpec{Kind: "elbSubnets", Name: "sn", State: "every-zone"}
	other := map[string]string{"kubernetes.io/cluster/other": "owned"}
	own := func(f *fixture) string { return f.cloud.ClusterTagKey() }
	return []checkCase{
		{"subnets tagged for another cluster only", none, func(f *fixture) { f.retag(other, own(f)) }, true},
		{"subnets as they start", none, func(f *fixture) {}, false},
		{"another cluster's tag beside this one's", none, func(f *fixture) { f.retag(other) }, false},
		{"no cluster tag at all", none, func(f *fixture) { f.retag(nil, own(f)) }, false},
		{"every subnet a candidate", all, func(f *fixture) {}, true},
		{"untagged subnets are candidates", all, func(f *fixture) { f.retag(nil, own(f)) }, true},
		{"subnets still another cluster's", all, func(f *fixture) { f.retag(other, own(f)) }, false},

		{"ELB in one subnet", one, func(f *fixture) { f.elbIn("sn", 1) }, true},
		{"ELB in every zone, want one", one, func(f *fixture) { f.elbIn("sn", len(f.cloud.AWSNetworkInfo().Subnets)) }, false},
		{"no ELB", one, func(f *fixture) { f.svc("sn") }, false},
		{"ELB in every zone", every, func(f *fixture) { f.elbIn("sn", len(f.cloud.AWSNetworkInfo().Subnets)) }, true},
		{"ELB in one zone, want every", every, func(f *fixture) { f.elbIn("sn", 1) }, false},
	}
}

func TestSubnetAnswers(t *testing.T) {
	f := newFixture(t)
	one := f.elbIn("one", 1)
	all := f.elbIn("all", len(f.cloud.AWSNetworkInfo().Subnets))
	for _, tc := range []struct {
		spec  format.AnswerSpec
		value string
		right bool
	}{
		{format.AnswerSpec{Kind: "elbSubnet", Name: "one"}, one[0], true},
		{format.AnswerSpec{Kind: "elbSubnet", Name: "one"}, all[1], false},
		{format.AnswerSpec{Kind: "elbSubnet", Name: "all"}, all[0], false}, // not in one subnet yet
	} {
		if err := ValidateAnswer(tc.spec); err != nil {
			t.Fatal(err)
		}
		o := CheckAnswer(f.ctx, f.env(), Input{}, tc.spec, tc.value)
		if o.Pass != tc.right || !o.Detail.Complete() {
			t.Errorf("%s(%s) %q: %+v", tc.spec.Kind, tc.spec.Name, tc.value, o)
		}
	}
}
