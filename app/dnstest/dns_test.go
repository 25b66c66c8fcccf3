//go:build !unit

package dnstest

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

func kubectl(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	return testutil.Kubectl(t, env.CP.KubeconfigPath(), timeout, args...)
}

func must(t *testing.T, args ...string) string {
	t.Helper()
	return testutil.MustKubectl(t, env.CP.KubeconfigPath(), args...)
}

// readyDNSEndpoints counts the ready endpoints of kube-dns's
// EndpointSlices: what a Pod's query can reach.
func readyDNSEndpoints(ctx context.Context) (int, error) {
	l, err := env.Client.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n, nil
}

// TestClusterDNS is the check of items 5 and 6 on the lab ccmlab
// serve builds: kube-system's add-ons run, and a Pod's resolver gets
// CoreDNS's answers from the CoreDNS Pods, failing as on a cluster when
// there are none.
func TestClusterDNS(t *testing.T) {
	cptest.Need(t)
	ctx := context.Background()
	lab, err := apptest.Serve(env, sim.DefaultLab())
	if err != nil {
		t.Fatal(err)
	}
	kubeIP := strings.TrimSpace(must(t, "get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"))
	dnsIP, err := sim.DNSIP(kubeIP)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kube-system", func(t *testing.T) {
		testutil.Eventually(t, 3*time.Minute, "coredns has 2 ready replicas", func() (bool, string) {
			d, err := env.Client.AppsV1().Deployments("kube-system").Get(ctx, sim.CoreDNSDeployment, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Status.ReadyReplicas == 2, fmt.Sprintf("%d ready", d.Status.ReadyReplicas)
		})
		svc, err := env.Client.CoreV1().Services("kube-system").Get(ctx, sim.DNSService, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.ClusterIP != dnsIP || len(svc.Spec.Ports) != 3 {
			t.Errorf("kube-dns: clusterIP %s ports %v, want %s and dns, dns-tcp, metrics", svc.Spec.ClusterIP, svc.Spec.Ports, dnsIP)
		}
		testutil.Eventually(t, time.Minute, "kube-dns has 2 ready endpoints", func() (bool, string) {
			n, err := readyDNSEndpoints(ctx)
			return err == nil && n == 2, fmt.Sprint(n, err)
		})
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 2*time.Minute, "kube-proxy ready on every node", func() (bool, string) {
			ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, sim.KubeProxyDaemonSet, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return int(ds.Status.NumberReady) == len(nodes.Items) && ds.Status.DesiredNumberScheduled == ds.Status.NumberReady,
				fmt.Sprintf("%d of %d ready, %d nodes", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, len(nodes.Items))
		})
		if out := must(t, "-n", "kube-system", "logs", "deploy/coredns"); !strings.Contains(out, ".:53\nCoreDNS-1.") {
			t.Errorf("coredns's log:\n%s", out)
		}
		if out := must(t, "-n", "kube-system", "logs", "ds/kube-proxy"); !strings.Contains(out, `"Using iptables Proxier"`) {
			t.Errorf("kube-proxy's log:\n%s", out)
		}
		if _, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, sim.AWSNodeDaemonSet, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("aws-node on the aws profile: %v, want none (vpc-cni only)", err)
		}
	})

	must(t, "create", "deployment", "web", "--image=nginx:1.29", "--port=80", "--replicas=2")
	must(t, "expose", "deployment", "web", "--port=80")
	must(t, "expose", "deployment", "web", "--name=web-headless", "--cluster-ip=None", "--port=80")
	must(t, "expose", "deployment", "web", "--name=web-lb", "--type=LoadBalancer", "--port=80")
	must(t, "run", "client", "--image=busybox:1.36", "--", "sleep", "3600")
	must(t, "rollout", "status", "deploy/web", "--timeout=90s")
	must(t, "wait", "--for=condition=Ready", "pod/client", "--timeout=90s")
	webIP := strings.TrimSpace(must(t, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}"))
	podIPs := strings.Fields(must(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))
	var lbHost string
	testutil.Eventually(t, 2*time.Minute, "web-lb has a hostname", func() (bool, string) {
		svc, err := env.Client.CoreV1().Services("default").Get(ctx, "web-lb", metav1.GetOptions{})
		if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, fmt.Sprint(err)
		}
		lbHost = svc.Status.LoadBalancer.Ingress[0].Hostname
		return lbHost != "", ""
	})
	vpc := netip.MustParsePrefix(lab.Cloud.Config().VPCCIDR)

	nslookup := func(t *testing.T, args string) (string, int) {
		t.Helper()
		return kubectl(t, time.Minute, append([]string{"exec", "client", "--", "nslookup"}, strings.Fields(args)...)...)
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"web", []string{"Name:\tweb.default.svc.cluster.local\nAddress: " + webIP}},
		{"web.default", []string{"Address: " + webIP}},
		{"web.default.svc", []string{"Address: " + webIP}},
		{"web.default.svc.cluster.local", []string{"Address: " + webIP}},
		{"web-headless", podIPs},
		{"kube-dns.kube-system", []string{"Address: " + dnsIP}},
		{strings.ReplaceAll(podIPs[0], ".", "-") + ".default.pod.cluster.local", []string{"Address: " + podIPs[0]}},
		{"-type=srv _dns._udp.kube-dns.kube-system", []string{"_dns._udp.kube-dns.kube-system.svc.cluster.local\tservice = 10 100 53 kube-dns.kube-system.svc.cluster.local"}},
		{dnsIP, []string{"\tname = kube-dns.kube-system.svc.cluster.local"}},
	} {
		t.Run("nslookup "+tc.name, func(t *testing.T) {
			out, code := nslookup(t, tc.name)
			if code != 0 || !strings.Contains(out, "Server:\t\t"+dnsIP) {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
	t.Run("load balancer hostname", func(t *testing.T) {
		out, code := nslookup(t, lbHost)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		found := false
		for _, l := range strings.Split(out, "\n") {
			if a, ok := strings.CutPrefix(l, "Address: "); ok {
				ip, err := netip.ParseAddr(a)
				found = found || (err == nil && vpc.Contains(ip))
			}
		}
		if !found {
			t.Errorf("no address in the VPC %s:\n%s", vpc, out)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		out, code := nslookup(t, "nope.example.com")
		if code == 0 || !strings.Contains(out, "** server can't find nope.example.com: NXDOMAIN") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("resolv.conf", func(t *testing.T) {
		out := must(t, "exec", "client", "--", "cat", "/etc/resolv.conf")
		want := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver " + dnsIP + "\noptions ndots:5\n"
		if out != want {
			t.Errorf("got %q, want %q", out, want)
		}
	})
	t.Run("coredns scaled to 0 and back", func(t *testing.T) {
		must(t, "-n", "kube-system", "scale", "deploy/coredns", "--replicas=0")
		testutil.Eventually(t, time.Minute, "kube-dns has no ready endpoint", func() (bool, string) {
			n, err := readyDNSEndpoints(ctx)
			return err == nil && n == 0, fmt.Sprint(n, err)
		})
		out, code := nslookup(t, "web")
		if code == 0 || !strings.Contains(out, ";; connection timed out; no servers could be reached") {
			t.Errorf("with no CoreDNS: exit %d:\n%s", code, out)
		}
		out, code = kubectl(t, time.Minute, "exec", "client", "--", "wget", "-q", "-O", "-", "http://web")
		if code == 0 || !strings.Contains(out, "bad address 'web'") {
			t.Errorf("wget with no CoreDNS: exit %d:\n%s", code, out)
		}
		// The exercise reset's restore scales it back (kubeadm's 2).
		if err := lab.RestoreKubeSystem(ctx); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 2*time.Minute, "kube-dns has a ready endpoint again", func() (bool, string) {
			n, err := readyDNSEndpoints(ctx)
			return err == nil && n > 0, fmt.Sprint(n, err)
		})
		if out, code := nslookup(t, "web"); code != 0 || !strings.Contains(out, "Address: "+webIP) {
			t.Errorf("after scaling back: exit %d:\n%s", code, out)
		}
	})
	t.Run("restore a deleted kube-proxy", func(t *testing.T) {
		must(t, "-n", "kube-system", "delete", "ds", "kube-proxy", "--wait=true")
		if err := lab.RestoreKubeSystem(ctx); err != nil {
			t.Fatal(err)
		}
		ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, sim.KubeProxyDaemonSet, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := ds.ManagedFields; len(m) == 0 || m[0].Manager != "kubeadm" {
			t.Errorf("field managers %v, want kubeadm", m)
		}
	})
}
