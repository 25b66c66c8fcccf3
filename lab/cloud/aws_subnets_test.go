package cloud

import (
	"maps"
	"path/filepath"
	"testing"
)

// Subnet tags are the students' to change (cloud-provider-aws picks load
// balancer subnets by them), survive a restart, and a reset puts them back.
func TestSubnetTags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	c := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	ctx := ctxAs("aws-cli")
	net := c.AWSNetworkInfo()
	sn := net.Subnets[0]
	if want := c.DefaultSubnetTags(sn.Zone); !maps.Equal(sn.Tags, want) {
		t.Fatalf("fresh subnet tags %v, want %v", sn.Tags, want)
	}
	other := "kubernetes.io/cluster/other"
	if err := c.CreateTags(ctx, []string{sn.ID}, map[string]string{other: "owned"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTags(ctx, []string{sn.ID}, []string{c.ClusterTagKey()}); err != nil {
		t.Fatal(err)
	}
	// What an AWS client sees: the filter the provider does not use, but a
	// student's `--filters Name=tag-key,...` does.
	got, err := c.DescribeSubnets(ctx, nil, []Filter{{Name: "tag-key", Values: []string{other}}})
	if err != nil || len(got) != 1 || got[0].ID != sn.ID {
		t.Fatalf("subnets tagged %s: %+v, %v", other, got, err)
	}
	if _, ok := got[0].Tags[c.ClusterTagKey()]; ok {
		t.Fatalf("the cluster tag is still there: %v", got[0].Tags)
	}
	// AWSNetworkInfo hands out a copy: changing it changes nothing.
	info := c.AWSNetworkInfo()
	info.Subnets[0].Tags["x"] = "y"
	if _, ok := c.AWSNetworkInfo().Subnets[0].Tags["x"]; ok {
		t.Fatal("AWSNetworkInfo shares its tag maps")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	after := c2.AWSNetworkInfo().Subnets[0]
	if after.Tags[other] != "owned" {
		t.Fatalf("tags after restart: %v", after.Tags)
	}
	if !c2.RestoreSubnetTags() {
		t.Fatal("RestoreSubnetTags changed nothing")
	}
	if got := c2.AWSNetworkInfo().Subnets[0].Tags; !maps.Equal(got, c2.DefaultSubnetTags(sn.Zone)) {
		t.Fatalf("tags after restore: %v", got)
	}
	if c2.RestoreSubnetTags() {
		t.Fatal("a second restore changed something")
	}
}
