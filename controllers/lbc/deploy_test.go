package lbc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// world is a lab cloud served by lab/awsapi on an httptest listener, and a
// controller whose SDK clients talk to it: the reconcile logic end to end
// on the wire, without a control plane.
type world struct {
	t     *testing.T
	cloud *cloud.Cloud
	c     *Controller
	nodes []*v1.Node
	ctx   context.Context
	// client and factory are the controller's (a fake clientset).
	client  *fake.Clientset
	factory informers.SharedInformerFactory
}

func awsFor(c *cloud.Cloud, endpoint string, creds awsapi.Credentials) AWS {
	cc, n := c.Config(), c.AWSNetworkInfo()
	return AWS{Endpoint: endpoint, Region: cc.Region, VPCID: n.VPCID, VPCCIDR: n.CIDR, ClusterID: cc.ClusterID,
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}
}

// newWorld builds the world; inProcess sends the requests through
// HandlerTransport instead of the listener.
func newWorld(t *testing.T, inProcess bool, services ...*v1.Service) *world {
	t.Helper()
	cl, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	keys := awsapi.NewKeys()
	creds, err := keys.Issue(Caller)
	if err != nil {
		t.Fatal(err)
	}
	h, err := awsapi.New(awsapi.Config{Cloud: cl, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	a := awsFor(cl, "", creds)
	if inProcess {
		a.Endpoint, a.HTTPClient = InProcessEndpoint, &http.Client{Transport: HandlerTransport(h)}
	} else {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		a.Endpoint = srv.URL
	}
	client := fake.NewClientset()
	for _, s := range services {
		if _, err := client.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(Config{Client: client, AWS: a, ClusterName: "ccmlab"}, factory)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, cloud: cl, c: c, ctx: context.Background(), client: client, factory: factory}
	for range 2 {
		in, err := cl.RunInstance(cloud.WithCaller(w.ctx, "test"), cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		w.nodes = append(w.nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName},
			Spec: v1.NodeSpec{ProviderID: "aws:///" + in.Zone + "/" + in.ID}})
	}
	return w
}

// deploy builds the model and deploys it; it returns the DNS name and the
// calls the controller made.
func (w *world) deploy(svc *v1.Service, es ...*discoveryv1.EndpointSlice) (string, bool, []cloud.Call) {
	w.t.Helper()
	m, err := BuildModel(svc, es, w.nodes, "ccmlab")
	if err != nil {
		w.t.Fatal(err)
	}
	since := w.lastSeq()
	dns, changed, err := w.c.deploy(w.ctx, m, svc)
	if err != nil {
		w.t.Fatal(err)
	}
	return dns, changed, w.cloud.Calls(since)
}

func (w *world) lastSeq() uint64 {
	calls := w.cloud.Calls(0)
	if len(calls) == 0 {
		return 0
	}
	return calls[len(calls)-1].Seq
}

func actions(calls []cloud.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Action)
	}
	return out
}

func mutations(calls []cloud.Call) []string {
	var out []string
	for _, c := range calls {
		if !strings.HasPrefix(c.Action, "Describe") {
			out = append(out, c.Action)
		}
	}
	return out
}

func targetList(lb cloud.LoadBalancer) []string {
	var out []string
	for _, t := range lb.Targets {
		out = append(out, t.ID+":"+itoa(t.Port))
	}
	return out
}

// nodePortRules lists the node group's CIDR rules on port.
func (w *world) nodePortRules(port int32) []string {
	var out []string
	for _, g := range w.cloud.SecurityGroupViews() {
		for _, p := range g.Ingress {
			if p.FromPort == port && p.ToPort == port {
				for _, c := range p.CIDRs {
					out = append(out, g.ID+" "+p.Protocol+" "+c)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestDeployIPTargets(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		name := "loopback listener"
		if inProcess {
			name = "in process"
		}
		t.Run(name, func(t *testing.T) {
			s := svc("shop", "web", "uid-1", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080})
			w := newWorld(t, inProcess, s)
			es := slice("http", 8080, map[string]*bool{"10.244.1.5": ptr.To(true), "10.244.2.6": ptr.To(true), "10.244.3.7": ptr.To(false)})

			dns, changed, calls := w.deploy(s, es)
			if !changed || dns == "" {
				t.Fatalf("first deploy: changed=%v dns=%q", changed, dns)
			}
			want := []string{"CreateLoadBalancer", "CreateTargetGroup", "RegisterTargets", "CreateListener"}
			if got := mutations(calls); !slices.Equal(got, want) {
				t.Errorf("first deploy made %v, want %v", got, want)
			}
			for _, c := range calls {
				if c.Caller != Caller || (c.Service != cloud.ServiceELBv2 && c.Service != cloud.ServiceEC2) {
					t.Errorf("call %s by %q over %q, want %q over the AWS API", c.Action, c.Caller, c.Service, Caller)
				}
			}
			lb, ok := w.cloud.LookupLoadBalancer(LoadBalancerName(s))
			if !ok {
				t.Fatal("the NLB is not in LookupLoadBalancer")
			}
			if lb.Kind != cloud.LBKindNetwork || lb.TargetType != cloud.TargetTypeIP || lb.DNSName != dns || lb.Scheme != cloud.SchemeInternetFacing {
				t.Errorf("lb = kind %q type %q dns %q scheme %q", lb.Kind, lb.TargetType, lb.DNSName, lb.Scheme)
			}
			if got := targetList(lb); !slices.Equal(got, []string{"10.244.1.5:8080", "10.244.2.6:8080"}) {
				t.Errorf("targets = %v", got)
			}
			if len(lb.Listeners) != 1 || lb.Listeners[0] != (cloud.Listener{Protocol: "TCP", Port: 80, TargetPort: 8080}) {
				t.Errorf("listeners = %v", lb.Listeners)
			}
			if lb.Tags[TagCluster] != "ccmlab" || lb.Tags[TagStack] != "shop/web" || lb.Tags[TagResource] != "LoadBalancer" {
				t.Errorf("tags = %v", lb.Tags)
			}
			if lb.PreserveClientIP {
				t.Error("an ip target group over TCP keeps the client IP; AWS's default is off")
			}
			if len(lb.Subnets) != len(w.cloud.AWSNetworkInfo().Subnets) {
				t.Errorf("subnets = %v, want one per zone", lb.Subnets)
			}

			// Nothing changed: only reads.
			_, changed, calls = w.deploy(s, es)
			if changed || len(mutations(calls)) != 0 {
				t.Errorf("second deploy: changed=%v, calls %v", changed, actions(calls))
			}

			// A Pod goes, another becomes ready: only the difference.
			es = slice("http", 8080, map[string]*bool{"10.244.2.6": ptr.To(true), "10.244.3.7": ptr.To(true)})
			_, _, calls = w.deploy(s, es)
			if got := mutations(calls); !slices.Equal(got, []string{"RegisterTargets", "DeregisterTargets"}) {
				t.Errorf("targets moved with %v", got)
			}
			lb, _ = w.cloud.LookupLoadBalancer(LoadBalancerName(s))
			if got := targetList(lb); !slices.Equal(got, []string{"10.244.2.6:8080", "10.244.3.7:8080"}) {
				t.Errorf("targets = %v", got)
			}

			// A tag removed by hand comes back.
			if _, err := w.cloud.ELBv2Tags(w.ctx, []string{lbARN(t, w, s)}, map[string]string{TagStack: "someone/else"}); err != nil {
				t.Fatal(err)
			}
			_, _, calls = w.deploy(s, es)
			if got := mutations(calls); !slices.Equal(got, []string{"AddTags"}) {
				t.Errorf("tag repaired with %v", got)
			}

			if err := w.c.teardown(w.ctx, s); err != nil {
				t.Fatal(err)
			}
			if _, ok := w.cloud.LookupLoadBalancer(LoadBalancerName(s)); ok {
				t.Error("the NLB is still there")
			}
			if tgs, err := w.cloud.DescribeTargetGroups(w.ctx, nil, "", nil); err != nil || len(tgs) != 0 {
				t.Errorf("target groups left: %v %v", tgs, err)
			}
			// Teardown again: nothing left, nothing fails.
			if err := w.c.teardown(w.ctx, s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func lbARN(t *testing.T, w *world, s *v1.Service) string {
	t.Helper()
	lbs, err := w.cloud.DescribeNLBs(w.ctx, nil, []string{LoadBalancerName(s)})
	if err != nil || len(lbs) != 1 {
		t.Fatalf("DescribeNLBs: %v %v", lbs, err)
	}
	return lbs[0].ARN
}

func TestDeployInstanceTargets(t *testing.T) {
	s := svc("shop", "api", "uid-2", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080})
	s.Annotations = map[string]string{AnnotationScheme: "internal"}
	w := newWorld(t, false, s)
	vpc := w.cloud.AWSNetworkInfo().CIDR
	group := w.cloud.AWSNetworkInfo().NodeGroupID

	_, _, calls := w.deploy(s)
	want := []string{"CreateLoadBalancer", "CreateTargetGroup", "RegisterTargets", "CreateListener", "AuthorizeSecurityGroupIngress"}
	if got := mutations(calls); !slices.Equal(got, want) {
		t.Errorf("first deploy made %v, want %v", got, want)
	}
	lb, _ := w.cloud.LookupLoadBalancer(LoadBalancerName(s))
	var ids []string
	for _, n := range w.nodes {
		ids = append(ids, instanceID(n.Spec.ProviderID)+":30080")
	}
	slices.Sort(ids)
	if lb.TargetType != cloud.TargetTypeInstance || !slices.Equal(targetList(lb), ids) || lb.Scheme != cloud.SchemeInternal {
		t.Errorf("lb = %s %v %s, want instance %v internal", lb.TargetType, targetList(lb), lb.Scheme, ids)
	}
	if !lb.PreserveClientIP {
		t.Error("instance targets keep the client IP")
	}
	// Internal: the VPC reaches the NodePort (clients and health checks).
	if got := w.nodePortRules(30080); !slices.Equal(got, []string{group + " tcp " + vpc}) {
		t.Errorf("rules on 30080 = %v", got)
	}
	if _, changed, calls := w.deploy(s); changed || len(mutations(calls)) != 0 {
		t.Errorf("second deploy: changed=%v, calls %v", changed, actions(calls))
	}

	// Source ranges replace the VPC-only rule (the VPC stays for health
	// checks).
	s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	w.deploy(s)
	if got := w.nodePortRules(30080); !slices.Equal(got, []string{group + " tcp " + vpc, group + " tcp 203.0.113.0/24"}) {
		t.Errorf("rules on 30080 with source ranges = %v", got)
	}

	// The NodePort changes: a new target group on the new port, the
	// listener moved to it, the old one deleted and its port closed.
	s.Spec.Ports[0].NodePort = 30099
	_, _, calls = w.deploy(s)
	got := mutations(calls)
	for _, a := range []string{"CreateTargetGroup", "ModifyListener", "DeleteTargetGroup", "RevokeSecurityGroupIngress", "AuthorizeSecurityGroupIngress"} {
		if !slices.Contains(got, a) {
			t.Errorf("NodePort change made %v, missing %s", got, a)
		}
	}
	if r := w.nodePortRules(30080); len(r) != 0 {
		t.Errorf("old NodePort still open: %v", r)
	}
	lb, _ = w.cloud.LookupLoadBalancer(LoadBalancerName(s))
	if len(lb.Listeners) != 1 || lb.Listeners[0].TargetPort != 30099 {
		t.Errorf("listeners = %v", lb.Listeners)
	}

	// The target type changes: new group, no error.
	s.Annotations[AnnotationTargetType] = "ip"
	w.deploy(s, slice("http", 8080, map[string]*bool{"10.244.1.5": ptr.To(true)}))
	lb, _ = w.cloud.LookupLoadBalancer(LoadBalancerName(s))
	if lb.TargetType != cloud.TargetTypeIP || !slices.Equal(targetList(lb), []string{"10.244.1.5:8080"}) {
		t.Errorf("after switching to ip: %s %v", lb.TargetType, targetList(lb))
	}
	if r := w.nodePortRules(30099); len(r) != 0 {
		t.Errorf("instance NodePort still open after switching to ip: %v", r)
	}

	if err := w.c.teardown(w.ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.cloud.LookupLoadBalancer(LoadBalancerName(s)); ok {
		t.Error("the NLB is still there")
	}
}

// A target group created before a failed CreateListener is attached to
// nothing; the next deploy finds it again, and teardown finds it by tag.
func TestDeployRecoversUnattachedTargetGroup(t *testing.T) {
	s := svc("shop", "web", "uid-3", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP})
	w := newWorld(t, false, s)
	es := slice("http", 8080, map[string]*bool{"10.244.1.5": ptr.To(true)})
	if err := w.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateListener}}); err != nil {
		t.Fatal(err)
	}
	m, _ := BuildModel(s, []*discoveryv1.EndpointSlice{es}, nil, "ccmlab")
	_, _, err := w.c.deploy(w.ctx, m, s)
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), Caller) {
		t.Fatalf("deploy with CreateListener denied: %v", err)
	}
	// Deleted while broken: teardown finds the unattached group by its tags.
	if err := w.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := w.c.teardown(w.ctx, s); err != nil {
		t.Fatal(err)
	}
	if tgs, _ := w.cloud.DescribeTargetGroups(w.ctx, nil, "", nil); len(tgs) != 0 {
		t.Errorf("target groups left: %d", len(tgs))
	}

	// Broken again, then healed: one target group, not two.
	if err := w.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateListener}}); err != nil {
		t.Fatal(err)
	}
	_, _, _ = w.c.deploy(w.ctx, m, s)
	if err := w.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Fatal(err)
	}
	w.deploy(s, es)
	if tgs, _ := w.cloud.DescribeTargetGroups(w.ctx, nil, "", nil); len(tgs) != 1 {
		t.Errorf("%d target groups, want 1", len(tgs))
	}
}

func TestAWSValidate(t *testing.T) {
	cl, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	creds, err := awsapi.NewKeys().Issue(Caller)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		endpoint string
		ok       bool
	}{
		{"http://127.0.0.1:4566", true},
		{"http://localhost:4566", true},
		{"http://127.0.0.1:4566/", true},
		{"", false},
		{"https://elasticloadbalancing.ap-northeast-1.amazonaws.com", false},
		{"http://elasticloadbalancing.ap-northeast-1.amazonaws.com", false},
		{"http://10.0.0.1:4566", false},
		{"https://127.0.0.1:4566", false},
		{"http://127.0.0.1.example.com:80", false},
		{"http://127.0.0.1:4566/caller/x", false},
		{"http://user@127.0.0.1:4566", false},
	} {
		a := awsFor(cl, tc.endpoint, creds)
		if err := a.validate(); (err == nil) != tc.ok {
			t.Errorf("endpoint %q: err = %v, want ok=%v", tc.endpoint, err, tc.ok)
		}
	}
	a := awsFor(cl, "http://127.0.0.1:4566", creds)
	a.Region = ""
	if err := a.validate(); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("no region: %v", err)
	}
}

// The environment the upstream provider's process sets (AWS_ENDPOINT_URL
// at a tripwire) or a user's shell has must not redirect the controller:
// its endpoint is always the one it was given.
func TestEnvironmentDoesNotRedirect(t *testing.T) {
	var hits atomic.Int32
	tripwire := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "tripwire", http.StatusForbidden)
	}))
	defer tripwire.Close()
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", "AWS_ENDPOINT_URL_EC2"} {
		t.Setenv(k, tripwire.URL)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	s := svc("shop", "web", "uid-4", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080})
	s.Annotations = nil // instance targets: ELBv2 and EC2 calls
	w := newWorld(t, false, s)
	if _, changed, _ := w.deploy(s); !changed {
		t.Fatal("nothing deployed")
	}
	if err := w.c.teardown(w.ctx, s); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the tripwire", n)
	}
}
