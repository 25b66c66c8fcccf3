package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// nodeDNSNet is fakeNet whose nodes' resolv.conf is known.
type nodeDNSNet struct{ fakeNet }

func (*nodeDNSNet) NodeResolvConf() string {
	return "search ap-northeast-1.compute.internal\nnameserver 10.0.0.2\n"
}

// TestResolvConf: /etc/resolv.conf by dnsPolicy, as the kubelet writes it.
func TestResolvConf(t *testing.T) {
	cluster := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
	node := "search ap-northeast-1.compute.internal\nnameserver 10.0.0.2\n"
	for _, tc := range []struct {
		name        string
		policy      v1.DNSPolicy
		hostNetwork bool
		config      *v1.PodDNSConfig
		want        string
	}{
		{"ClusterFirst", v1.DNSClusterFirst, false, nil, cluster},
		{"unset", "", false, nil, cluster},
		{"Default", v1.DNSDefault, false, nil, node},
		{"host network", v1.DNSClusterFirst, true, nil, node},
		{"host network with ClusterFirstWithHostNet", v1.DNSClusterFirstWithHostNet, true, nil, cluster},
		{"None", v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"a.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
			"search a.example\nnameserver 1.2.3.4\noptions ndots:2 edns0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(Config{Network: &nodeDNSNet{}})
			if err != nil {
				t.Fatal(err)
			}
			pod := testPod("busybox")
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.config
			if got := rt.resolvConf(pod); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
