//go:build !unit

package kubelet

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

func tolerateUninitialized() []v1.Toleration {
	return []v1.Toleration{{Key: cloudproviderapi.TaintExternalCloudProvider, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
}

func podSpec() v1.PodSpec {
	return v1.PodSpec{
		Containers:                    []v1.Container{{Name: "web", Image: "nginx:1.27"}},
		TerminationGracePeriodSeconds: ptr.To[int64](30),
	}
}

func hasUninitializedTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider && t.Effect == v1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func removeUninitializedTaint(t *testing.T, name string) {
	t.Helper()
	patch := `{"spec":{"taints":null}}`
	if _, err := env.Client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNodesRegisterWithoutCCM is the chapter's "no Node controller" state:
// Nodes are Ready but keep the uninitialized taint, so Pods stay Pending.
func TestNodesRegisterWithoutCCM(t *testing.T) {
	l := newLab(t, "10.1.0.0/16", "aws", nil)
	insts := l.launch(3)
	ns := newNamespace(t)
	ctx := context.Background()

	for _, inst := range insts {
		n := waitNodeReady(t, inst.PrivateDNSName, v1.ConditionTrue, waitTimeout)
		checks := []struct {
			what string
			ok   bool
		}{
			{"uninitialized taint", hasUninitializedTaint(n)},
			{"no providerID", n.Spec.ProviderID == ""},
			{"no addresses", len(n.Status.Addresses) == 0},
			{"hostname label", n.Labels[v1.LabelHostname] == inst.PrivateDNSName},
			{"os label", n.Labels[v1.LabelOSStable] == "linux"},
			{"arch label", n.Labels[v1.LabelArchStable] == "amd64"},
			// A real kubelet still writes the beta twins itself; the
			// node-lifecycle controller would otherwise patch them in.
			{"beta os label", n.Labels["beta.kubernetes.io/os"] == "linux"},
			{"beta arch label", n.Labels["beta.kubernetes.io/arch"] == "amd64"},
			{"cpu capacity", n.Status.Capacity.Cpu().String() == "2"},
			{"memory capacity", n.Status.Capacity.Memory().String() == "8Gi"},
			{"pods capacity", n.Status.Capacity.Pods().String() == "110"},
			{"allocatable", n.Status.Allocatable.Pods().String() == "110"},
			{"kubelet version", n.Status.NodeInfo.KubeletVersion == "v1.37.2"},
			{"runtime", strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://2.")},
			{"MemoryPressure=False", nodeCondition(n, v1.NodeMemoryPressure) == v1.ConditionFalse},
			{"DiskPressure=False", nodeCondition(n, v1.NodeDiskPressure) == v1.ConditionFalse},
			{"PIDPressure=False", nodeCondition(n, v1.NodePIDPressure) == v1.ConditionFalse},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("node %s: want %s; got spec %+v, labels %v, status %+v", n.Name, c.what, n.Spec, n.Labels, n.Status)
			}
		}
		// The kubelet creates its Lease beside its status updates, not
		// before them (as a real one does): Ready may come first.
		var lease *coordinationv1.Lease
		waitFor(t, waitTimeout, "the Lease of "+n.Name, func(ctx context.Context) (bool, error) {
			var err error
			lease, err = env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
			return err == nil, err
		})
		if ptr.Deref(lease.Spec.HolderIdentity, "") != n.Name || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != n.UID {
			t.Errorf("lease %s: holder %v owners %+v, want held by and owned by the node", n.Name, lease.Spec.HolderIdentity, lease.OwnerReferences)
		}
	}

	// A few heartbeats later every kubelet reports one.
	waitFor(t, waitTimeout, "heartbeats in Kubelets()", func(context.Context) (bool, error) {
		st := l.mgr.Kubelets()
		if len(st) != 3 {
			return false, fmt.Errorf("%d kubelets", len(st))
		}
		for _, s := range st {
			if !s.Running || s.LastHeartbeat.IsZero() {
				return false, fmt.Errorf("%+v", s)
			}
		}
		return true, nil
	})

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	// Since v1.3x the scheduler no longer names the taint in the message;
	// which taint it is, the Nodes above show.
	waitFor(t, waitTimeout, "FailedScheduling for an untolerated taint", func(ctx context.Context) (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"reason": "FailedScheduling", "involvedObject.kind": "Pod"}.String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "3 node(s) had untolerated taint") {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("scheduler: %s", msg)
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels2selector(labels)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Status.Phase != v1.PodPending || p.Spec.NodeName != "" {
			t.Errorf("pod %s: phase %s on %q, want Pending and unscheduled", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
}

func labels2selector(m map[string]string) string { return labels.SelectorFromSet(m).String() }

// waitPodRunning waits until the Pod is Running and Ready and returns it.
func waitPodRunning(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, waitTimeout, "pod "+name+" running", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if p.Status.Phase != v1.PodRunning || !podReady(p) {
			return false, fmt.Errorf("phase %s conditions %+v", p.Status.Phase, p.Status.Conditions)
		}
		return true, nil
	})
	return pod
}

func podReady(p *v1.Pod) bool {
	c := findPodCondition(&p.Status, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

func waitPodGone(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, waitTimeout, "pod "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// checkPodStatus checks what a kubelet reports for a running Pod.
func checkPodStatus(t *testing.T, p *v1.Pod, hostIP string) {
	t.Helper()
	if p.Status.HostIP != hostIP || len(p.Status.HostIPs) != 1 || p.Status.HostIPs[0].IP != hostIP {
		t.Errorf("pod %s: hostIP %q hostIPs %v, want %s", p.Name, p.Status.HostIP, p.Status.HostIPs, hostIP)
	}
	if len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
		t.Errorf("pod %s: podIPs %v do not match podIP %s", p.Name, p.Status.PodIPs, p.Status.PodIP)
	}
	if p.Status.StartTime == nil {
		t.Errorf("pod %s: no startTime", p.Name)
	}
	for _, ct := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		if c := findPodCondition(&p.Status, ct); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("pod %s: condition %s = %+v, want True", p.Name, ct, c)
		}
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		t.Fatalf("pod %s: %d container statuses for %d containers", p.Name, len(p.Status.ContainerStatuses), len(p.Spec.Containers))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil || cs.ImageID == "" || !strings.HasPrefix(cs.ContainerID, "containerd://") {
			t.Errorf("pod %s: container status %+v, want running, ready, with image and container IDs", p.Name, cs)
		}
	}
}

func createPod(t *testing.T, ns string, pod *v1.Pod) *v1.Pod {
	t.Helper()
	p, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func getNode(t *testing.T, name string) *v1.Node {
	t.Helper()
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func inPodCIDR(t *testing.T, node *v1.Node, ip string) {
	t.Helper()
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s podCIDR %q: %v", node.Name, node.Spec.PodCIDR, err)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		t.Fatalf("pod IP %q: %v", ip, err)
	}
	if !cidr.Contains(addr) || addr == cidr.Addr() || addr == cidr.Addr().Next() {
		t.Errorf("pod IP %s: want inside %s, not .0 or .1", ip, cidr)
	}
}

// TestPodsRun covers a kubelet's side of running Pods, on two nodes that
// no CCM initializes.
func TestPodsRun(t *testing.T) {
	l := newLab(t, "10.2.0.0/16", "aws", nil)
	insts := l.launch(2)
	byNode := map[string]cloud.Instance{}
	for _, inst := range insts {
		byNode[inst.PrivateDNSName] = inst
		waitNodeReady(t, inst.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	}
	ns := newNamespace(t)
	ctx := context.Background()

	t.Run("tolerating the taint", func(t *testing.T) {
		// Pinned to one node so that the IPs must differ within it.
		node := insts[0].PrivateDNSName
		var ips []string
		for i := range 3 {
			spec := podSpec()
			spec.Tolerations = tolerateUninitialized()
			spec.NodeSelector = map[string]string{v1.LabelHostname: node}
			p := createPod(t, ns, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tolerant-%d", i)}, Spec: spec})
			p = waitPodRunning(t, ns, p.Name)
			checkPodStatus(t, p, insts[0].PrivateIP)
			inPodCIDR(t, getNode(t, node), p.Status.PodIP)
			ips = append(ips, p.Status.PodIP)
		}
		if ips[0] == ips[1] || ips[1] == ips[2] || ips[0] == ips[2] {
			t.Errorf("pod IPs on one node %v, want distinct", ips)
		}
		for i := range 3 {
			name := fmt.Sprintf("tolerant-%d", i)
			// Default grace period: the kubelet must finish the deletion.
			if err := env.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPodGone(t, ns, name)
		}
		waitFor(t, waitTimeout, "IPs released", func(context.Context) (bool, error) {
			return l.mgr.pool(node).len() == 0, nil
		})
	})

	t.Run("host network", func(t *testing.T) {
		spec := podSpec()
		spec.Tolerations = tolerateUninitialized()
		spec.HostNetwork = true
		p := createPod(t, ns, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hostnet"}, Spec: spec})
		p = waitPodRunning(t, ns, p.Name)
		host := byNode[p.Spec.NodeName].PrivateIP
		checkPodStatus(t, p, host)
		if p.Status.PodIP != host {
			t.Errorf("hostNetwork pod IP %s, want the host's %s", p.Status.PodIP, host)
		}
	})

	t.Run("taint removed as by the CCM", func(t *testing.T) {
		for _, inst := range insts {
			removeUninitializedTaint(t, inst.PrivateDNSName)
		}
		labels := map[string]string{"app": "web"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
			},
		}
		if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, waitTimeout, "deployment available", func(ctx context.Context) (bool, error) {
			d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return d.Status.AvailableReplicas == 2, nil
		})
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels2selector(labels)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			checkPodStatus(t, p, byNode[p.Spec.NodeName].PrivateIP)
			inPodCIDR(t, getNode(t, p.Spec.NodeName), p.Status.PodIP)
		}
		waitFor(t, waitTimeout, "Kubelets() to count 3 pods", func(context.Context) (bool, error) {
			total := 0
			for _, s := range l.mgr.Kubelets() {
				total += s.Pods
			}
			if total != 3 { // two replicas and the hostNetwork Pod
				return false, fmt.Errorf("%d pods", total)
			}
			return true, nil
		})
	})
}

// TestVPCCNIPodIPs: with the vpc-cni profile Pods get addresses from the
// VPC's upper half, where the cloud never puts an instance.
func TestVPCCNIPodIPs(t *testing.T) {
	l := newLab(t, "10.3.0.0/16", "vpc-cni", nil)
	inst := l.launch(1)[0]
	waitNodeReady(t, inst.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	ns := newNamespace(t)
	spec := podSpec()
	spec.Tolerations = tolerateUninitialized()
	spec.NodeName = inst.PrivateDNSName // bound directly, bypassing the scheduler
	p := createPod(t, ns, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vpc"}, Spec: spec})
	p = waitPodRunning(t, ns, p.Name)
	checkPodStatus(t, p, inst.PrivateIP)
	addr := netip.MustParseAddr(p.Status.PodIP)
	if want := netip.MustParsePrefix("10.3.128.0/17"); !want.Contains(addr) {
		t.Errorf("pod IP %s, want inside %s", addr, want)
	}
	// As ipamd does, the kubelet puts the Pod's address on the node's
	// interface (where the AWS Load Balancer Controller finds a Pod's ENI)
	// and takes it off when the Pod goes.
	secondary := func() []string {
		vs, err := l.cloud.DescribeInstancesAWS(cloud.WithCaller(context.Background(), "test"), []string{inst.ID}, nil)
		if err != nil || len(vs) != 1 {
			t.Fatalf("DescribeInstances: %v", err)
		}
		var out []string
		for _, a := range vs[0].PodAddresses {
			out = append(out, a.IP)
		}
		return out
	}
	if got := secondary(); !slices.Equal(got, []string{p.Status.PodIP}) {
		t.Errorf("instance's secondary addresses %v, want the Pod's %s", got, p.Status.PodIP)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitTimeout, "the address off the interface", func(context.Context) (bool, error) {
		return len(secondary()) == 0, nil
	})
}

// TestInstanceLifecycle: a stopped or terminated instance's kubelet goes
// quiet and the real node-lifecycle controller marks the Node Unknown; a
// restarted instance reports Ready again.
func TestInstanceLifecycle(t *testing.T) {
	l := newLab(t, "10.4.0.0/16", "aws", nil)
	insts := l.launch(2)
	for _, inst := range insts {
		waitNodeReady(t, inst.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	}
	stopped, terminated := insts[0], insts[1]
	ctx := cloud.WithCaller(context.Background(), "user")
	if _, err := l.cloud.StopInstance(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.TerminateInstance(ctx, terminated.ID); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	// node-monitor-grace-period is 10s; the controller checks every 5s.
	for _, inst := range insts {
		waitNodeReady(t, inst.PrivateDNSName, v1.ConditionUnknown, 40*time.Second)
	}
	t.Logf("both nodes Unknown %s after the instances went down", time.Since(began).Round(100*time.Millisecond))
	for _, s := range l.mgr.Kubelets() {
		if s.Running {
			t.Errorf("kubelet %s still running after its instance went down", s.NodeName)
		}
	}

	if _, err := l.cloud.StartInstance(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	n := waitNodeReady(t, stopped.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	if !hasUninitializedTaint(n) {
		t.Errorf("restarted node lost its taint; want it unchanged")
	}
	// The terminated one stays down.
	if got := nodeCondition(getNode(t, terminated.PrivateDNSName), v1.NodeReady); got != v1.ConditionUnknown {
		t.Errorf("terminated node Ready=%s, want Unknown", got)
	}
}

// TestReRegisterAndRestart: objects deleted underneath a running kubelet
// come back; a restarted lab adopts its Nodes and Pod IPs.
func TestReRegisterAndRestart(t *testing.T) {
	l := newLab(t, "10.5.0.0/16", "aws", nil)
	inst := l.launch(1)[0]
	name := inst.PrivateDNSName
	first := waitNodeReady(t, name, v1.ConditionTrue, waitTimeout)
	ctx := context.Background()

	// Ready comes from the status loop and the lease from its own loop, so
	// a Ready node may not have its first lease yet: wait for it.
	var oldLease types.UID
	waitFor(t, waitTimeout, "first lease", func(ctx context.Context) (bool, error) {
		lease, err := env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		oldLease = lease.UID
		return true, nil
	})
	if err := env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitTimeout, "lease recreated", func(ctx context.Context) (bool, error) {
		lease, err := env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return lease.UID != oldLease, nil
	})

	if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitTimeout, "node registered again", func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.UID != first.UID && hasUninitializedTaint(n), nil
	})
	waitFor(t, waitTimeout, "lease owned by the new node", func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lease, err := env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == n.UID, nil
	})

	// As the CCM would: initialized, so no taint.
	removeUninitializedTaint(t, name)
	ns := newNamespace(t)
	spec := podSpec()
	spec.NodeName = name
	p1 := waitPodRunning(t, ns, createPod(t, ns, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Spec: spec}).Name)
	before := getNode(t, name)

	l.restart("aws")
	after := waitNodeReady(t, name, v1.ConditionTrue, waitTimeout)
	if after.UID != before.UID || hasUninitializedTaint(after) {
		t.Errorf("after restart: node UID %s (was %s), tainted %v; want the same node, untainted", after.UID, before.UID, hasUninitializedTaint(after))
	}
	p2 := waitPodRunning(t, ns, createPod(t, ns, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Spec: spec}).Name)
	p1, err := env.Client.CoreV1().Pods(ns).Get(ctx, p1.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p1.Status.PodIP == p2.Status.PodIP {
		t.Errorf("pods before and after the restart share IP %s", p1.Status.PodIP)
	}
	if got, ok := l.mgr.pool(name).lookup(p1.UID); !ok || got.String() != p1.Status.PodIP {
		t.Errorf("restarted manager holds %v for %s, want its IP %s", got, p1.Name, p1.Status.PodIP)
	}
}

// TestNodeStatusReporting: conditions are rewritten every
// NodeStatusInterval, and at once when they say anything but healthy.
func TestNodeStatusReporting(t *testing.T) {
	l := newLab(t, "10.6.0.0/16", "aws", func(c *Config) {
		c.HeartbeatInterval = 500 * time.Millisecond
		c.NodeStatusInterval = 2 * time.Second
	})
	name := l.launch(1)[0].PrivateDNSName
	n := waitNodeReady(t, name, v1.ConditionTrue, waitTimeout)
	first := findCondition(n, v1.NodeReady).LastHeartbeatTime
	waitFor(t, waitTimeout, "a periodic status write", func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return findCondition(n, v1.NodeReady).LastHeartbeatTime.After(first.Time), nil
	})

	// What the node-lifecycle controller writes for a silent node.
	patch := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."}]}}`
	if _, err := env.Client.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	n = waitNodeReady(t, name, v1.ConditionTrue, 10*time.Second)
	if c := findCondition(n, v1.NodeReady); c.Reason != "KubeletReady" {
		t.Errorf("Ready condition %+v, want reason KubeletReady", c)
	}
}
