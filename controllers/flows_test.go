//go:build !unit

package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmlab/ccmlab/controllers/provider"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// nodeInitialized checks what the Node controller writes.
func nodeInitialized(l *lab, inst cloud.Instance) (bool, string) {
	n, err := l.client.CoreV1().Nodes().Get(l.ctx, inst.PrivateDNSName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	switch {
	case hasTaint(n, cloudproviderapi.TaintExternalCloudProvider):
		return false, "still tainted uninitialized"
	case n.Spec.ProviderID != "aws:///"+inst.Zone+"/"+inst.ID:
		return false, "providerID " + n.Spec.ProviderID
	case n.Labels[v1.LabelTopologyRegion] != "ap-northeast-1" || n.Labels[v1.LabelTopologyZone] != inst.Zone ||
		n.Labels[v1.LabelInstanceTypeStable] != "m5.large":
		return false, "labels " + strings.Join([]string{n.Labels[v1.LabelTopologyRegion], n.Labels[v1.LabelTopologyZone], n.Labels[v1.LabelInstanceTypeStable]}, ",")
	}
	var ip, host bool
	for _, a := range n.Status.Addresses {
		ip = ip || (a.Type == v1.NodeInternalIP && a.Address == inst.PrivateIP)
		host = host || (a.Type == v1.NodeHostName && a.Address == inst.PrivateDNSName)
	}
	if !ip || !host {
		return false, "addresses " + jsonOf(n.Status.Addresses)
	}
	return true, ""
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestNodeInitialization(t *testing.T) {
	t.Run("controller on", func(t *testing.T) {
		l := newLab(t, "aws", []string{profile.Node})
		insts := l.addNodes(2)
		for _, inst := range insts {
			eventually(t, 15*time.Second, "node "+inst.PrivateDNSName+" initialized", func() (bool, string) { return nodeInitialized(l, inst) })
		}
		n, _ := l.client.CoreV1().Nodes().Get(l.ctx, insts[0].PrivateDNSName, metav1.GetOptions{})
		eventually(t, 10*time.Second, "Synced event", func() (bool, string) {
			r := reasons(l.events(n.UID))
			return slices.Contains(r, "Synced"), strings.Join(r, ",")
		})
		calls := l.cloud.Calls(0)
		if !slices.ContainsFunc(calls, func(c cloud.Call) bool {
			return c.Caller == "node-controller" && c.Action == cloud.ActionDescribeInstances
		}) {
			t.Error("no DescribeInstances call by node-controller in the call log")
		}
	})
	t.Run("off, then on without restart", func(t *testing.T) {
		l := newLab(t, "aws", []string{})
		inst := l.launch()
		l.register(inst)
		time.Sleep(3 * time.Second)
		n, err := l.client.CoreV1().Nodes().Get(l.ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider) || n.Spec.ProviderID != "" {
			t.Fatalf("with the Node controller off the node changed: taints %v providerID %q", n.Spec.Taints, n.Spec.ProviderID)
		}
		if len(l.cloud.Calls(0)) != 1 { // just our RunInstances
			t.Errorf("cloud calls with every controller off: %+v", l.cloud.Calls(0))
		}
		if err := l.mgr.Enable(profile.Node); err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "node initialized after Enable", func() (bool, string) { return nodeInitialized(l, inst) })
	})
}

func TestServiceFlow(t *testing.T) {
	for _, tc := range []struct {
		profile string
		ipMode  bool
	}{{"aws", false}, {"ip", true}} {
		t.Run(tc.profile, func(t *testing.T) {
			l := newLab(t, tc.profile, nil)
			insts := l.addNodesBeforeServiceController(3)
			svc := l.createService(l.lbService("web", nil))
			nodePort := svc.Spec.Ports[0].NodePort
			lbName := cloudprovider.DefaultLoadBalancerName(svc)

			var got *v1.Service
			eventually(t, 15*time.Second, "ingress written", func() (bool, string) {
				got = l.getService("web")
				return len(got.Status.LoadBalancer.Ingress) == 1, jsonOf(got.Status)
			})
			lb, ok := l.lbByName(lbName)
			if !ok {
				t.Fatalf("no cloud load balancer %s", lbName)
			}
			in := got.Status.LoadBalancer.Ingress[0]
			if tc.ipMode {
				if in.IP != lb.IP || in.Hostname != "" {
					t.Errorf("ingress %+v, want IP %s", in, lb.IP)
				}
			} else if in.Hostname != lb.DNSName || !strings.HasSuffix(in.Hostname, ".elb.ap-northeast-1.ccmlab.internal") {
				t.Errorf("ingress %+v, want hostname %s", in, lb.DNSName)
			}
			if !slices.Contains(got.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
				t.Errorf("finalizers %v", got.Finalizers)
			}
			eventually(t, 10*time.Second, "targets are every node's NodePort", func() (bool, string) {
				lb, _ := l.lbByName(lbName)
				return slices.Equal(targetIDs(lb), wantTargets(insts, nodePort)), strings.Join(targetIDs(lb), " ")
			})
			if lb.Tags[provider.TagServiceName] != l.ns+"/web" || lb.HealthCheck == nil || lb.HealthCheck.Port != nodePort {
				t.Errorf("lb tags %v health check %+v", lb.Tags, lb.HealthCheck)
			}
			eventually(t, 10*time.Second, "events", func() (bool, string) {
				r := reasons(l.events(got.UID))
				i, j := slices.Index(r, "EnsuringLoadBalancer"), slices.Index(r, "EnsuredLoadBalancer")
				return i >= 0 && j > i, strings.Join(r, ",")
			})
			for _, c := range l.cloud.Calls(0) {
				if c.Action == cloud.ActionCreateLoadBalancer && c.Caller != "service-controller" {
					t.Errorf("CreateLoadBalancer by %q", c.Caller)
				}
			}

			// A fourth node joins: the Service controller adds it. Under
			// -race it joins with the Service controller off, and the fresh
			// instance's first sync adds it (see
			// addNodesBeforeServiceController); otherwise the running
			// controller's node worker does.
			var more []cloud.Instance
			if raceEnabled {
				more = l.addNodesBeforeServiceController(1)
			} else {
				more = l.addNodes(1)
			}
			insts = append(insts, more...)
			eventually(t, 20*time.Second, "new node registered as target", func() (bool, string) {
				lb, _ := l.lbByName(lbName)
				return slices.Equal(targetIDs(lb), wantTargets(insts, nodePort)), strings.Join(targetIDs(lb), " ")
			})

			if err := l.client.CoreV1().Services(l.ns).Delete(l.ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 15*time.Second, "LB and Service gone", func() (bool, string) {
				_, lbLeft := l.lbByName(lbName)
				_, err := l.client.CoreV1().Services(l.ns).Get(l.ctx, "web", metav1.GetOptions{})
				return !lbLeft && apierrors.IsNotFound(err), "lb left " + boolStr(lbLeft) + ", get: " + errStr(err)
			})
		})
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func errStr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestServicePendingWithoutController(t *testing.T) {
	l := newLab(t, "aws", []string{profile.Node})
	inst := l.addNodes(1)[0]
	eventually(t, 15*time.Second, "node initialized", func() (bool, string) { return nodeInitialized(l, inst) })
	svc := l.createService(l.lbService("pending", nil))
	time.Sleep(3 * time.Second)
	got := l.getService("pending")
	if s := jsonOf(got.Status); s != `{"loadBalancer":{}}` {
		t.Errorf("status with the Service controller off = %s", s)
	}
	if evs := l.controllerEvents(svc.UID); len(evs) != 0 {
		t.Errorf("events with the Service controller off: %v", reasons(evs))
	}
	if err := l.mgr.Enable(profile.Service); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "EXTERNAL-IP filled after Enable", func() (bool, string) {
		got = l.getService("pending")
		return ingressOf(got) != "", jsonOf(got.Status)
	})
}

func TestIAMDenyHeals(t *testing.T) {
	l := newLab(t, "aws", nil)
	l.addNodesBeforeServiceController(1)
	if err := l.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateLoadBalancer}}); err != nil {
		t.Fatal(err)
	}
	svc := l.createService(l.lbService("denied", nil))
	const text = "AccessDenied: User: arn:aws:sts::000000000000:assumed-role/ccmlab-ccm/service-controller is not authorized to perform: elasticloadbalancing:CreateLoadBalancer"
	eventually(t, 15*time.Second, "SyncLoadBalancerFailed with the AccessDenied text", func() (bool, string) {
		for _, e := range l.events(svc.UID) {
			if e.Reason == "SyncLoadBalancerFailed" && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, text) {
				return true, ""
			}
		}
		return false, jsonOf(reasons(l.events(svc.UID)))
	})
	if ingressOf(l.getService("denied")) != "" {
		t.Fatal("ingress written while CreateLoadBalancer is denied")
	}
	allowed := time.Now()
	if err := l.cloud.SetFaults(cloud.Faults{}); err != nil {
		t.Fatal(err)
	}
	// The Service controller retries on its own (5 s, 10 s, ... backoff).
	eventually(t, 45*time.Second, "healed without user action", func() (bool, string) {
		return ingressOf(l.getService("denied")) != "", "still pending"
	})
	t.Logf("healed %s after the deny was lifted", time.Since(allowed).Round(100*time.Millisecond))
}

func TestRoutes(t *testing.T) {
	l := newLab(t, "aws", []string{profile.Node, profile.Route})
	insts := l.addNodes(3)
	routeRows := func() map[string]string {
		out := map[string]string{}
		for _, r := range l.cloud.Snapshot().Routes {
			out[r.DestinationCIDR] = r.InstanceID
		}
		return out
	}
	wantRows := func(insts []cloud.Instance) (map[string]string, string) {
		want := map[string]string{}
		for _, inst := range insts {
			n, err := l.client.CoreV1().Nodes().Get(l.ctx, inst.PrivateDNSName, metav1.GetOptions{})
			if err != nil {
				return nil, err.Error()
			}
			if len(n.Spec.PodCIDRs) == 0 {
				return nil, n.Name + " has no podCIDR yet"
			}
			for _, c := range n.Spec.PodCIDRs {
				want[c] = inst.ID
			}
		}
		return want, ""
	}
	check := func(insts []cloud.Instance) func() (bool, string) {
		return func() (bool, string) {
			want, why := wantRows(insts)
			if want == nil {
				return false, why
			}
			got := routeRows()
			return jsonOf(got) == jsonOf(want), "routes " + jsonOf(got) + " want " + jsonOf(want)
		}
	}
	eventually(t, 20*time.Second, "a route per podCIDR", check(insts))
	n, _ := l.client.CoreV1().Nodes().Get(l.ctx, insts[0].PrivateDNSName, metav1.GetOptions{})
	eventually(t, 10*time.Second, "NodeNetworkUnavailable=False", func() (bool, string) {
		n, _ = l.client.CoreV1().Nodes().Get(l.ctx, insts[0].PrivateDNSName, metav1.GetOptions{})
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeNetworkUnavailable {
				return c.Status == v1.ConditionFalse && c.Reason == "RouteCreated", jsonOf(c)
			}
		}
		return false, "no condition"
	})
	if err := l.client.CoreV1().Nodes().Delete(l.ctx, insts[2].PrivateDNSName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "row of the removed node gone", check(insts[:2]))
	for _, c := range l.cloud.Calls(0) {
		if (c.Action == cloud.ActionCreateRoute || c.Action == cloud.ActionDeleteRoute) && c.Caller != "route-controller" {
			t.Errorf("%s by %q", c.Action, c.Caller)
		}
	}
}

func TestNodeLifecycle(t *testing.T) {
	l := newLab(t, "aws", []string{profile.Node, profile.NodeLifecycle})
	insts := l.addNodes(3)
	for _, inst := range insts {
		eventually(t, 15*time.Second, "node initialized", func() (bool, string) { return nodeInitialized(l, inst) })
	}
	term, stop, keep := insts[0], insts[1], insts[2]

	if _, err := l.cloud.TerminateInstance(l.ctx, term.ID); err != nil {
		t.Fatal(err)
	}
	l.setReady(term.PrivateDNSName, v1.ConditionUnknown)
	if _, err := l.cloud.StopInstance(l.ctx, stop.ID); err != nil {
		t.Fatal(err)
	}
	l.setReady(stop.PrivateDNSName, v1.ConditionUnknown)

	eventually(t, 15*time.Second, "terminated instance's Node deleted", func() (bool, string) {
		_, err := l.client.CoreV1().Nodes().Get(l.ctx, term.PrivateDNSName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), errStr(err)
	})
	eventually(t, 15*time.Second, "stopped instance's Node tainted shutdown", func() (bool, string) {
		n, err := l.client.CoreV1().Nodes().Get(l.ctx, stop.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return hasTaint(n, cloudproviderapi.TaintNodeShutdown), jsonOf(n.Spec.Taints)
	})
	n, err := l.client.CoreV1().Nodes().Get(l.ctx, keep.PrivateDNSName, metav1.GetOptions{})
	if err != nil || hasTaint(n, cloudproviderapi.TaintNodeShutdown) {
		t.Errorf("healthy node touched: %v %v", err, n.Spec.Taints)
	}

	// Started again and Ready: the taint comes off.
	if _, err := l.cloud.StartInstance(l.ctx, stop.ID); err != nil {
		t.Fatal(err)
	}
	l.setReady(stop.PrivateDNSName, v1.ConditionTrue)
	eventually(t, 15*time.Second, "shutdown taint removed", func() (bool, string) {
		n, err := l.client.CoreV1().Nodes().Get(l.ctx, stop.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !hasTaint(n, cloudproviderapi.TaintNodeShutdown), jsonOf(n.Spec.Taints)
	})
}

func TestManagerAPI(t *testing.T) {
	l := newLab(t, "kubevirt", []string{profile.Node})
	m := l.mgr
	if got := m.Status(); jsonOf(got) != `{"node":true,"nodelifecycle":false}` {
		t.Errorf("Status = %v", got)
	}
	for _, tc := range []struct {
		name string
		want error
	}{
		{"service", ErrNotInProfile},
		{"route", ErrNotInProfile},
		{"lbc", ErrNotInProfile},
		{"bogus", ErrUnknownController},
		{"nodelifecycle", nil},
		{"node", nil},
	} {
		if err := m.Enable(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("Enable(%q) = %v, want %v", tc.name, err, tc.want)
		}
		if err := m.Disable(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("Disable(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}

	ch, cancel := m.Subscribe(1000)
	defer cancel()
	// Many concurrent toggles: they serialize, and the last word wins.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			name := []string{profile.Node, profile.NodeLifecycle}[i%2]
			if err := m.Enable(name); err != nil {
				t.Error(err)
			}
			if err := m.Disable(name); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := m.Enable(profile.Node); err != nil {
		t.Fatal(err)
	}
	if err := m.Enable(profile.Node); err != nil { // idempotent
		t.Fatal(err)
	}
	if got := m.Status(); !got[profile.Node] || got[profile.NodeLifecycle] {
		t.Errorf("Status = %v", got)
	}
	var changes []StatusChange
	for len(ch) > 0 {
		changes = append(changes, <-ch)
	}
	if len(changes) == 0 || changes[len(changes)-1].Controller != profile.Node || !changes[len(changes)-1].Enabled {
		t.Errorf("changes = %+v", changes)
	}
	for i := 1; i < len(changes); i++ {
		if changes[i].Seq != changes[i-1].Seq+1 {
			t.Errorf("gap in Seq: %d -> %d", changes[i-1].Seq, changes[i].Seq)
		}
	}
	// The kubevirt providerID, written by the real Node controller.
	inst := l.addNodes(1)[0]
	eventually(t, 15*time.Second, "kubevirt providerID", func() (bool, string) {
		n, err := l.client.CoreV1().Nodes().Get(l.ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Spec.ProviderID == "kubevirt://"+inst.PrivateDNSName, n.Spec.ProviderID
	})
}

// TestSwitchWaitsForStragglers: an API request of a switched-off instance
// that outlives StopTimeout keeps the next instance from starting, so two
// instances of one controller never act at once; once it returns, the
// controller starts and catches up.
func TestSwitchWaitsForStragglers(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	var held atomic.Int32
	hold := func(c *Config) {
		c.Tuning.StopTimeout = 300 * time.Millisecond
		rc := rest.CopyConfig(c.RestConfig)
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				// The Node controller writing a Node: hold the first one.
				if r.Method != http.MethodGet && strings.HasSuffix(r.UserAgent(), "/"+profile.Node) &&
					strings.Contains(r.URL.Path, "/nodes/") && held.Add(1) == 1 {
					<-release
				}
				return rt.RoundTrip(r)
			})
		})
		c.RestConfig = rc
	}
	l := newLab(t, "aws", []string{profile.Node}, hold)
	inst := l.addNodes(1)[0]
	eventually(t, 15*time.Second, "a node write held", func() (bool, string) { return held.Load() > 0, "" })

	t0 := time.Now()
	if err := l.mgr.Disable(profile.Node); err != nil {
		t.Fatalf("Disable: %v", err)
	}
	t.Logf("Disable returned after %s with a request still in flight", time.Since(t0).Round(time.Millisecond))
	if err := l.mgr.Enable(profile.Node); !errors.Is(err, ErrBusy) {
		t.Fatalf("Enable with the old instance's request in flight = %v, want ErrBusy", err)
	}
	if on := l.mgr.Status()[profile.Node]; on {
		t.Error("node reported on after a refused Enable")
	}
	free()
	if err := l.mgr.Enable(profile.Node); err != nil {
		t.Fatalf("Enable after the request returned: %v", err)
	}
	eventually(t, 15*time.Second, "node initialized", func() (bool, string) { return nodeInitialized(l, inst) })
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStaleServiceGetsNoLoadBalancer: a Service controller instance acting
// on a cached Service that the apiserver no longer has in that form (gone,
// re-created, being deleted) creates no load balancer; see confirmService.
func TestStaleServiceGetsNoLoadBalancer(t *testing.T) {
	ctx := context.Background()
	// A lab with no controller on, for its namespace and its cleanup, which
	// removes the Services before the next test's controllers could see them.
	ns := newLab(t, "aws", []string{}).ns
	prov, c := newProvider(t, "aws")
	p := prov.For(Caller(profile.Service)).WithServices(env.Client.CoreV1())
	inst := run(t, c)
	nodes := []*v1.Node{nodeNamed(inst.PrivateDNSName, "")}
	create := func(name string, finalizers ...string) *v1.Service {
		s := lbSvc("", v1.ServicePort{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP})
		s.Name, s.Namespace, s.Finalizers = name, ns, finalizers
		s.Spec.Ports[0].NodePort = 0
		got, err := env.Client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.Ports[0].NodePort = 30080 // what EnsureLoadBalancer reads
		return got
	}

	live := create("live")
	gone := live.DeepCopy()
	gone.Name, gone.UID = "gone", "0b6f1c1e-0000-4000-8000-000000000001"
	recreated := create("recreated")
	recreated.UID = "0b6f1c1e-0000-4000-8000-000000000002"
	deleting := create("deleting", "ccmlab.test/hold")
	if err := env.Client.CoreV1().Services(ns).Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		svc  *v1.Service
		want string
	}{
		{gone, "no longer exists"},
		{recreated, "deleted and created again"},
		{deleting, "is being deleted"},
		{live, ""},
	} {
		t.Run(tc.svc.Name, func(t *testing.T) {
			_, err := p.EnsureLoadBalancer(ctx, "ccmlab", tc.svc, nodes)
			_, exists := findLB(c, cloudprovider.DefaultLoadBalancerName(tc.svc))
			if tc.want == "" {
				if err != nil || !exists {
					t.Fatalf("EnsureLoadBalancer = %v, LB exists %v; want it created", err, exists)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("EnsureLoadBalancer = %v, want an error saying %q", err, tc.want)
			}
			if exists {
				t.Error("a load balancer was created")
			}
		})
	}
}
