package upstreamaws_test

import (
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
)

func TestCloudConfigOverrides(t *testing.T) {
	cfg := upstreamaws.Config{Endpoint: "http://127.0.0.1:1", Region: "ap-northeast-1", VPCID: "vpc-1", SubnetID: "subnet-1", RouteTableID: "rtb-1", ClusterID: "ccmlab", Dir: t.TempDir()}
	got := cfg.CloudConfig()
	for _, want := range []string{
		"Service = EC2\n", "Service = Elastic Load Balancing\n", "Service = Elastic Load Balancing v2\n",
		"URL = http://127.0.0.1:1/\n", "SigningName = ec2\n", "SigningName = elasticloadbalancing\n",
		"VPC = vpc-1\n", "SubnetID = subnet-1\n", "KubernetesClusterID = ccmlab\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cloud config lacks %q:\n%s", want, got)
		}
	}
	// The caller is the key's, never a path the config names.
	if strings.Contains(got, "/caller/") {
		t.Errorf("cloud config names a caller in a URL:\n%s", got)
	}
}
