//go:build !unit

package upstreamaws_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var env *cptest.Env

func TestMain(m *testing.M) { cptest.Main(m, &env) }

// TestUpstreamProvider runs the CCM's Node and Service controllers on the
// upstream AWS provider against the lab's AWS API: a Node is initialized
// with an aws:/// provider ID, a LoadBalancer Service gets a Classic ELB's
// DNS name, and no request ever reaches the tripwire.
func TestUpstreamProvider(t *testing.T) {
	cptest.Need(t)
	tw, err := upstreamaws.StartTripwire()
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	// A CA bundle the user's environment names, here one that does not
	// exist, would fail the SDK's config; SetProcessEnv drops it.
	t.Setenv("AWS_CA_BUNDLE", filepath.Join(t.TempDir(), "no-such-bundle.pem"))
	if err := upstreamaws.SetProcessEnv(tw.URL()); err != nil {
		t.Fatal(err)
	}
	// The AWS API needs the simulation's cloud, the controllers need the
	// API: the factory waits for it.
	var up upstreamaws.Config
	ready := make(chan struct{})
	dir := t.TempDir()
	factory := func(caller string, client kubernetes.Interface, f informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			return nil, errors.New("the AWS API did not start")
		}
		return upstreamaws.New(up, caller, client, f, stop)
	}
	p, _ := profile.Get("aws")
	lab, err := apptest.Start(env, sim.Config{Profile: p, Nodes: 2, Controllers: []string{profile.Node, profile.Service},
		ClusterCIDR: env.CP.ClusterCIDR(), Upstream: factory})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := awsapi.Listen(awsapi.ServerConfig{Handler: awsapi.Config{Cloud: lab.Cloud}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(env.Ctx) }()
	n := lab.Cloud.AWSNetworkInfo()
	up = upstreamaws.Config{Endpoint: srv.URL(), Region: lab.Cloud.Config().Region, VPCID: n.VPCID, SubnetID: n.Subnets[0].ID,
		RouteTableID: n.RouteTableID, ClusterID: lab.Cloud.Config().ClusterID, Dir: dir, Keys: srv.Keys()}
	close(ready)

	ctx, cancel := context.WithTimeout(env.Ctx, 5*time.Minute)
	defer cancel()
	client := env.Client
	// A Node initialized by the upstream Node controller.
	var providerID string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, nd := range nodes.Items {
			if strings.HasPrefix(nd.Spec.ProviderID, "aws:///") && !slices.ContainsFunc(nd.Spec.Taints, func(t v1.Taint) bool {
				return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
			}) {
				providerID = nd.Spec.ProviderID
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Node initialized by the upstream provider: %v; tripwire %v; calls %s", err, tw.Hits(), lastCalls(lab.Cloud))
	}
	if parts := strings.Split(strings.TrimPrefix(providerID, "aws:///"), "/"); len(parts) != 2 || !strings.HasPrefix(parts[1], "i-") {
		t.Fatalf("provider ID %q, want aws:///<zone>/i-...", providerID)
	}

	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "upstream-web", Namespace: "default"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "upstream-web"},
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var host string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		host = s.Status.LoadBalancer.Ingress[0].Hostname
		return true, nil
	})
	if err != nil {
		t.Fatalf("no load balancer: %v; tripwire %v; calls %s", err, tw.Hits(), lastCalls(lab.Cloud))
	}
	if !strings.HasSuffix(host, "."+lab.Cloud.Config().Region+".elb.amazonaws.com") {
		t.Fatalf("ingress hostname %q is not a Classic ELB's", host)
	}
	seen := map[string]bool{}
	for _, c := range lab.Cloud.Calls(0) {
		if c.Caller == "service-controller" && c.ErrorCode == "" {
			seen[c.Action] = true
		}
	}
	for _, a := range []string{"CreateLoadBalancer", "CreateSecurityGroup", "AuthorizeSecurityGroupIngress", "ConfigureHealthCheck", "RegisterInstancesWithLoadBalancer"} {
		if !seen[a] {
			t.Errorf("no successful %s by service-controller in the call log: %s", a, lastCalls(lab.Cloud))
		}
	}
	if hits := tw.Hits(); len(hits) > 0 {
		t.Fatalf("requests reached the tripwire (they would have gone to AWS): %v", hits)
	}
	// Each controller signed with its own key, and the call log names it
	// after the key.
	callers := map[string]bool{}
	for _, c := range lab.Cloud.Calls(0) {
		if c.Service != "" {
			callers[c.Caller] = true
		}
	}
	node, _ := srv.Keys().Issue("node-controller")
	svcKey, _ := srv.Keys().Issue("service-controller")
	if !callers["node-controller"] || !callers["service-controller"] || node.AccessKeyID == svcKey.AccessKeyID {
		t.Fatalf("AWS callers %v; node and service keys %s %s", callers, node.AccessKeyID, svcKey.AccessKeyID)
	}
}

func lastCalls(c *cloud.Cloud) string {
	calls := c.Calls(0)
	if len(calls) > 30 {
		calls = calls[len(calls)-30:]
	}
	var b strings.Builder
	for _, c := range calls {
		b.WriteString("\n  " + c.Caller + " " + c.Service + " " + c.Action + " " + c.ErrorCode + " " + c.Error)
	}
	return b.String()
}
