//go:build !unit

package upstreamtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// serveUpstream is apptest.ServeUpstream with nodes workers; the tripwire must
// see no request.
func serveUpstream(t *testing.T, nodes int) *apptest.Lab {
	t.Helper()
	l := sim.DefaultLab()
	l.Nodes = nodes
	lab, up, err := apptest.ServeUpstream(env, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if hits := up.Tripwire.Hits(); len(hits) > 0 {
			t.Errorf("requests reached the tripwire (they would have gone to AWS): %v", hits)
		}
	})
	return lab
}

// TestUpstreamLoadBalancersCarryTraffic sends requests through the load
// balancers the upstream AWS provider makes, on the served lab: a Classic
// ELB proxies TCP (the Pod never sees the client: under Local it sees the
// ELB's address in the VPC, under Cluster kube-proxy's masquerade of it),
// the proxy-protocol annotation brings the client back into the access
// log, and an NLB's instance targets keep the client's IP under Local.
func TestUpstreamLoadBalancersCarryTraffic(t *testing.T) {
	cptest.Need(t)
	lab := serveUpstream(t, 2)
	ctx, cancel := context.WithTimeout(env.Ctx, 10*time.Minute)
	defer cancel()
	client := env.Client
	const ns = "default"
	labels := map[string]string{"app": "dp-upstream"}
	// One replica: under Local only its node is a healthy target.
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "dp-upstream"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.29", Ports: []v1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AppsV1().Deployments(ns).Delete(context.Background(), dep.Name, metav1.DeleteOptions{})
	})

	const clientIP = "198.51.100.23"
	tests := []struct {
		name        string
		policy      v1.ServiceExternalTrafficPolicy
		annotations map[string]string
		kind        string
		podSees     string // "elb": an address in one of the ELB's subnets; "node": a node's IP; "client"
		logClient   bool   // the access log shows the client (PROXY header)
	}{
		{"classic-cluster", v1.ServiceExternalTrafficPolicyCluster, nil, cloud.LBKindClassic, "node", false},
		{"classic-local", v1.ServiceExternalTrafficPolicyLocal, nil, cloud.LBKindClassic, "elb", false},
		{"classic-proxy", v1.ServiceExternalTrafficPolicyLocal, map[string]string{awsv1.ServiceAnnotationLoadBalancerProxyProtocol: "*"}, cloud.LBKindClassic, "elb", true},
		{"nlb-local", v1.ServiceExternalTrafficPolicyLocal, map[string]string{awsv1.ServiceAnnotationLoadBalancerType: "nlb"}, cloud.LBKindNetwork, "client", false},
	}
	for _, tc := range tests {
		svc := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "dp-" + tc.name, Annotations: tc.annotations},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: labels, ExternalTrafficPolicy: tc.policy,
				Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.CoreV1().Services(ns).Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		})
	}
	net := lab.Cloud.AWSNetworkInfo()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var host string
			testutil.EventuallyCtx(t, 5*time.Minute, "the Service's load balancer hostname", func(ctx context.Context) (bool, error) {
				s, err := client.CoreV1().Services(ns).Get(ctx, "dp-"+tc.name, metav1.GetOptions{})
				if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
					return false, nil
				}
				host = s.Status.LoadBalancer.Ingress[0].Hostname
				return host != "", nil
			})
			var tr dataplane.Trace
			testutil.Eventually(t, 3*time.Minute, "a request through "+host+" reaching the Pod", func() (bool, string) {
				var err error
				tr, err = lab.Dataplane.Do(ctx, dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: host, ClientIP: clientIP, Origin: dataplane.OriginLab})
				if err != nil {
					return false, err.Error()
				}
				return tr.Status == 200, fmt.Sprintf("status %d: %s; groups %+v", tr.Status, tr.Error, lab.Cloud.SecurityGroupViews())
			})
			lb, ok := lab.Cloud.LookupLoadBalancer(tr.LB)
			if !ok || lb.Kind != tc.kind {
				t.Fatalf("the trace went through %q (kind %q), want a %s load balancer", tr.LB, lb.Kind, tc.kind)
			}
			t.Logf("%s: %s; source at the node %s, the Pod sees %s", tc.name, lb.DNSName, tr.LBSourceIP, tr.SourceIPSeenByPod)
			switch tc.podSees {
			case "client":
				if tr.SourceIPSeenByPod != clientIP {
					t.Errorf("the Pod sees %s, want the client %s", tr.SourceIPSeenByPod, clientIP)
				}
			case "elb":
				if tr.SourceIPSeenByPod != tr.LBSourceIP || !inSubnets(tr.SourceIPSeenByPod, lb.Subnets, net) {
					t.Errorf("the Pod sees %s, want the ELB's address in one of its subnets %v (source at the node %s)", tr.SourceIPSeenByPod, lb.Subnets, tr.LBSourceIP)
				}
			case "node":
				if !inSubnets(tr.LBSourceIP, lb.Subnets, net) {
					t.Errorf("source at the node %s, want the ELB's address in one of its subnets %v", tr.LBSourceIP, lb.Subnets)
				}
				if tr.SourceIPSeenByPod == clientIP || tr.SourceIPSeenByPod == tr.LBSourceIP || !isNodeIP(lab.Cloud, tr.SourceIPSeenByPod) {
					t.Errorf("the Pod sees %s, want a node's IP (kube-proxy masquerades under Cluster)", tr.SourceIPSeenByPod)
				}
			}
			if tc.name == "classic-local" {
				viaListener(t, lab, tr.LB, tr.LBSourceIP)
			}
			if tc.name == "classic-cluster" {
				withoutELBRule(t, lab, lb, host, clientIP)
			}
			if !tc.logClient {
				return
			}
			_, name, _ := strings.Cut(tr.Pod, "/")
			testutil.Eventually(t, time.Minute, "the client in the Pod's access log", func() (bool, string) {
				raw, err := client.CoreV1().Pods(ns).GetLogs(name, &v1.PodLogOptions{TailLines: ptr.To[int64](1)}).DoRaw(ctx)
				if err != nil {
					return false, err.Error()
				}
				return strings.HasPrefix(string(raw), clientIP+" - - ["), string(raw)
			})
		})
	}
	// The rules the provider made, for docs/aws.md.
	for _, g := range lab.Cloud.SecurityGroupViews() {
		t.Logf("security group %s (%s): %+v", g.ID, g.Name, g.Ingress)
	}
	t.Run("past the quotas: AWS's limit errors, the socket cap", func(t *testing.T) {
		quotasOnTheServedLab(t, lab)
	})
	t.Run("every AWS caller signs with its own key", func(t *testing.T) {
		callerKeysOnTheServedLab(t, lab)
	})
}

// callerKeysOnTheServedLab: on the served lab the CCM's controllers, in
// their DaemonSet's Pod, sign with keys of their own, which the call log
// names; the student's key (aws.env's) is aws-cli, and a path cannot make
// it anyone else.
func callerKeysOnTheServedLab(t *testing.T, lab *apptest.Lab) {
	callers := map[string]bool{}
	for _, c := range lab.Cloud.Calls(0) {
		if c.Service != "" {
			callers[c.Caller] = true
		}
	}
	if !callers["service-controller"] || !callers["node-controller"] {
		t.Fatalf("callers of the AWS API in the call log: %v", callers)
	}
	student := lab.AWSAPI.StudentKey()
	client := func(path string) *ec2.Client {
		cfg := aws.Config{Region: lab.Cloud.Config().Region, Retryer: func() aws.Retryer { return aws.NopRetryer{} },
			Credentials: credentials.NewStaticCredentialsProvider(student.AccessKeyID, student.SecretAccessKey, "")}
		return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(lab.AWSAPI.URL() + path) })
	}
	before := len(lab.Cloud.Calls(0))
	if _, err := client("").DescribeVpcs(env.Ctx, &ec2.DescribeVpcsInput{}); err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, c := range lab.Cloud.Calls(0)[before:] {
		if c.Action == "DescribeVpcs" {
			mine = append(mine, c.Caller)
		}
	}
	if !slices.Equal(mine, []string{"aws-cli"}) {
		t.Fatalf("the student's DescribeVpcs is logged by %v", mine)
	}
	before = len(lab.Cloud.Calls(0))
	var ae smithy.APIError
	if _, err := client("/caller/service-controller/").DescribeVpcs(env.Ctx, &ec2.DescribeVpcsInput{}); !errors.As(err, &ae) || ae.ErrorCode() != "InvalidAction" {
		t.Fatalf("the student's key at a controller's path: %v, want InvalidAction", err)
	}
	for _, c := range lab.Cloud.Calls(0)[before:] {
		if c.Action == "DescribeVpcs" {
			t.Fatalf("a refused call is in the call log: %+v", c)
		}
	}
}

// withoutELBRule revokes the rule the provider added to the nodes' group
// for the ELB's group: requests through the ELB are dropped, the trace
// naming the group, port and source no rule admits; authorizing it again
// lets them through. (The Service controller adds the rule back only when
// it syncs the load balancer again, on a change of the Service or of the
// set of nodes, neither of which happens here.)
func withoutELBRule(t *testing.T, lab *apptest.Lab, lb cloud.LoadBalancer, host, clientIP string) {
	t.Helper()
	ctx := cloud.WithService(cloud.WithCaller(env.Ctx, "user"), cloud.ServiceEC2)
	nodeGroup := lab.Cloud.AWSNetworkInfo().NodeGroupID
	rule := []cloud.IPPermission{{Protocol: "-1", FromPort: -1, ToPort: -1, GroupIDs: lb.SecurityGroups[:1]}}
	if err := lab.Cloud.RevokeIngress(ctx, nodeGroup, rule); err != nil {
		t.Fatalf("revoking the nodes' rule for %v: %v", lb.SecurityGroups, err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := lab.Cloud.AuthorizeIngress(ctx, nodeGroup, rule); err != nil {
				t.Errorf("authorizing the rule again: %v", err)
			}
		}
	}
	defer restore()
	testutil.Eventually(t, time.Minute, "a request dropped by the nodes' security group", func() (bool, string) {
		tr, err := lab.Dataplane.Do(env.Ctx, dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: host, ClientIP: clientIP, Origin: dataplane.OriginLab})
		if err != nil {
			return false, err.Error()
		}
		ok := tr.Status == 504 && tr.ErrorKey == tracetext.SGInstance && strings.Contains(tr.Error, nodeGroup) &&
			strings.Contains(tr.Error, lb.SecurityGroups[0]) && strings.Contains(tr.Error, "tcp/")
		return ok, fmt.Sprintf("status %d: %s", tr.Status, tr.Error)
	})
	restore()
	testutil.Eventually(t, time.Minute, "a request through again after the rule is back", func() (bool, string) {
		tr, err := lab.Dataplane.Do(env.Ctx, dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: host, ClientIP: clientIP, Origin: dataplane.OriginLab})
		if err != nil {
			return false, err.Error()
		}
		return tr.Status == 200, fmt.Sprintf("status %d: %s", tr.Status, tr.Error)
	})
}

// viaListener sends a real HTTP request to the loopback listener of load
// balancer lb, as curl would: the answer comes from the Pod, which names
// the source it saw (the ELB's address src, not curl's 127.0.0.1).
func viaListener(t *testing.T, lab *apptest.Lab, lb, src string) {
	t.Helper()
	var addr string
	testutil.Eventually(t, time.Minute, "a listener for "+lb, func() (bool, string) {
		for _, l := range lab.Dataplane.Listeners() {
			if l.LB == lb && l.Port == 80 {
				addr = l.Address
				return true, ""
			}
		}
		return false, fmt.Sprint(lab.Dataplane.Listeners())
	})
	// Until the first health check has run, a Local Service's other node
	// is still a candidate target, and a request there is dropped.
	var id string
	testutil.Eventually(t, time.Minute, "a 200 through the listener at "+addr, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		id = resp.Header.Get(dataplane.TraceHeader)
		return resp.StatusCode == 200 && id != "", fmt.Sprintf("%d, trace %q: %s", resp.StatusCode, id, body)
	})
	i := slices.IndexFunc(lab.Dataplane.Traces(), func(tr dataplane.Trace) bool { return tr.ID == id })
	if i < 0 {
		t.Fatalf("no trace %s", id)
	}
	tr := lab.Dataplane.Traces()[i]
	if tr.ClientIP != "127.0.0.1" || tr.SourceIPSeenByPod != src {
		t.Errorf("through the listener: client %s, the Pod sees %s; want 127.0.0.1 and the ELB's %s", tr.ClientIP, tr.SourceIPSeenByPod, src)
	}
}

func inSubnets(ip string, subnets []string, net cloud.AWSNetwork) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(net.Subnets, func(s cloud.AWSSubnet) bool {
		return slices.Contains(subnets, s.ID) && netip.MustParsePrefix(s.CIDR).Contains(a)
	})
}

func isNodeIP(c *cloud.Cloud, ip string) bool {
	return slices.ContainsFunc(c.Instances(), func(i cloud.Instance) bool { return i.PrivateIP == ip })
}
