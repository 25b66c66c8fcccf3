package upstreamaws_test

import (
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
)

func TestCloudConfigOverrides(t *testing.T) {
	cfg := upstreamaws.Config{Endpoint: "http://127.0.0.1:1", Region: "ap-northeast-1", VPCID: "vpc-1", SubnetID: "subnet-1", RouteTableID: "rtb-1", ClusterID: "ccmlab", Dir: t.TempDir()}
	got := cfg.CloudConfig("node-controller")
	for _, want := range []string{
		"Service = EC2\n", "Service = Elastic Load Balancing\n", "Service = Elastic Load Balancing v2\n",
		"URL = http://127.0.0.1:1/caller/node-controller/\n", "SigningName = ec2\n", "SigningName = elasticloadbalancing\n",
		"VPC = vpc-1\n", "SubnetID = subnet-1\n", "KubernetesClusterID = ccmlab\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cloud config lacks %q:\n%s", want, got)
		}
	}
}
