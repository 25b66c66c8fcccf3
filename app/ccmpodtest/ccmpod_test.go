//go:build !unit

package ccmpodtest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/profile"
)

const ns = metav1.NamespaceSystem

func TestCCMPod(t *testing.T) {
	cptest.Need(t)
	// The lab `ccmlab serve --nodes 2` builds: a control-plane node with
	// the control plane's static Pods and the CCM's Pod, two workers.
	served := sim.DefaultLab()
	served.Nodes = 2
	p := served.Profile
	l, err := apptest.Serve(env, served)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := env.Client
	dsName := sim.CCMDaemonSetName(p)
	selector := "k8s-app=" + dsName

	t.Run("daemonset shape", func(t *testing.T) {
		var ds any
		testutil.EventuallyCtx(t, time.Minute, "the CCM's DaemonSet", func(ctx context.Context) (bool, error) {
			d, err := c.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ds = d
			spec := d.Spec.Template.Spec
			if spec.ServiceAccountName != sim.CCMServiceAccount {
				return false, fmt.Errorf("serviceAccountName %q", spec.ServiceAccountName)
			}
			if _, ok := spec.NodeSelector[kubelet.LabelControlPlane]; !ok {
				return false, fmt.Errorf("nodeSelector %v", spec.NodeSelector)
			}
			keys := []string{}
			for _, tol := range spec.Tolerations {
				keys = append(keys, tol.Key)
			}
			if !slices.Contains(keys, "node.cloudprovider.kubernetes.io/uninitialized") || !slices.Contains(keys, kubelet.LabelControlPlane) {
				return false, fmt.Errorf("tolerations %v", keys)
			}
			return true, nil
		})
		_ = ds
	})

	// The running CCM Pod: scheduled by the scheduler onto the
	// control-plane node, Running and Ready, and of the DaemonSet's
	// current template. Right after the template changed, the old Pod
	// still runs until the rolling update deletes it: a test that took it
	// would delete a Pod already gone, or wait for its Lease forever.
	runningPod := func(t *testing.T, not string) *v1.Pod {
		t.Helper()
		var pod *v1.Pod
		testutil.EventuallyCtx(t, 2*time.Minute, "a running CCM Pod", func(ctx context.Context) (bool, error) {
			rev, err := currentRevision(ctx)
			if err != nil {
				return false, err
			}
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			var states []string
			for i := range pods.Items {
				p := &pods.Items[i]
				states = append(states, p.Name+":"+string(p.Status.Phase)+"@"+p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey])
				if string(p.UID) == not || p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning ||
					p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != rev {
					continue
				}
				if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
					pod = p
					return true, nil
				}
			}
			return false, fmt.Errorf("pods %v (current revision %s)", states, rev)
		})
		return pod
	}
	holder := func(t *testing.T, pod *v1.Pod) {
		t.Helper()
		testutil.EventuallyCtx(t, time.Minute, "the Lease held by "+pod.Name, func(ctx context.Context) (bool, error) {
			lease, err := c.CoordinationV1().Leases(ns).Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			h := ""
			if lease.Spec.HolderIdentity != nil {
				h = *lease.Spec.HolderIdentity
			}
			if !strings.HasPrefix(h, pod.Name+"_") {
				return false, fmt.Errorf("holder %q", h)
			}
			if l.Manager.Identity() != h {
				return false, fmt.Errorf("the manager's leader %q, the Lease's %q", l.Manager.Identity(), h)
			}
			return true, nil
		})
	}

	var first *v1.Pod
	t.Run("pod scheduled and running", func(t *testing.T) {
		first = runningPod(t, "")
		node, err := c.CoreV1().Nodes().Get(ctx, first.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := node.Labels[kubelet.LabelControlPlane]; !ok {
			t.Errorf("the CCM Pod runs on %s, not the control-plane node", node.Name)
		}
		testutil.EventuallyCtx(t, time.Minute, "the scheduler's and the kubelet's events", func(ctx context.Context) (bool, error) {
			evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(first.UID)).String()})
			if err != nil {
				return false, err
			}
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
			}
			for _, r := range []string{"Scheduled", "Pulled", "Created", "Started"} {
				if !slices.Contains(reasons, r) {
					return false, fmt.Errorf("events %v", reasons)
				}
			}
			return true, nil
		})
		holder(t, first)
		testutil.EventuallyCtx(t, 2*time.Minute, "every node initialized by the Pod's CCM", func(ctx context.Context) (bool, error) {
			nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(nodes.Items) != 3 {
				return false, fmt.Errorf("%d nodes", len(nodes.Items))
			}
			for _, n := range nodes.Items {
				for _, taint := range n.Spec.Taints {
					if taint.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
						return false, fmt.Errorf("%s is uninitialized", n.Name)
					}
				}
			}
			return true, nil
		})
	})
	if first == nil {
		t.FailNow()
	}

	t.Run("rbac", func(t *testing.T) {
		for _, tc := range []struct {
			verb, resource, sub string
			want                bool
		}{
			{"patch", "services", "status", true},
			{"update", "nodes", "", true},
			{"create", "leases", "", true},
			{"get", "secrets", "", false},
		} {
			t.Run(tc.verb+" "+tc.resource+"/"+tc.sub, func(t *testing.T) {
				group := ""
				if tc.resource == "leases" {
					group = "coordination.k8s.io"
				}
				sar, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
					User:               "system:serviceaccount:kube-system:" + sim.CCMServiceAccount,
					ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: tc.verb, Group: group, Resource: tc.resource, Subresource: tc.sub},
				}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if sar.Status.Allowed != tc.want {
					t.Errorf("allowed %t, want %t (%s)", sar.Status.Allowed, tc.want, sar.Status.Reason)
				}
			})
		}
	})

	var second *v1.Pod
	t.Run("deleted pod gives a new pod and a new leader", func(t *testing.T) {
		if err := c.CoreV1().Pods(ns).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		second = runningPod(t, string(first.UID))
		holder(t, second)
	})

	t.Run("switch service off patches the daemonset", func(t *testing.T) {
		if err := l.Manager.Disable(profile.Service); err != nil {
			t.Fatal(err)
		}
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if args := ds.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--controllers=*,-service") {
			t.Errorf("args %v", args)
		}
		if st := l.Manager.Status(); st[profile.Service] || !st[profile.Node] {
			t.Errorf("status %v", st)
		}
		pod := runningPod(t, string(second.UID))
		holder(t, pod)

		svc := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "ccmpod-lb", Namespace: "default"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "none"},
				Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: v1.ProtocolTCP}}},
		}
		if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		})
		// Barrier: the KCM has handled the Service (its EndpointSlice);
		// the CCM that runs had as long, and no Service controller runs.
		testutil.EventuallyCtx(t, time.Minute, "the Service's EndpointSlice", func(ctx context.Context) (bool, error) {
			s, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc.Name})
			return err == nil && len(s.Items) > 0, err
		})
		got, err := c.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.LoadBalancer.Ingress) != 0 || len(l.Cloud.Snapshot().LoadBalancers) != 0 {
			t.Errorf("with the Service controller off the Service got %v", got.Status.LoadBalancer.Ingress)
		}

		if err := l.Manager.Enable(profile.Service); err != nil {
			t.Fatal(err)
		}
		testutil.EventuallyCtx(t, 2*time.Minute, "the address once the Service controller is on again", func(ctx context.Context) (bool, error) {
			got, err := c.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
			return err == nil && len(got.Status.LoadBalancer.Ingress) > 0, err
		})
	})

	t.Run("editing --controllers in the DaemonSet switches", func(t *testing.T) {
		// What kubectl -n kube-system edit ds does: the page's switches
		// follow what the rolled CCM runs, not the other way round.
		setControllers := func(v string) {
			editArgs(t, func(args []string) []string {
				for i, a := range args {
					if strings.HasPrefix(a, "--controllers=") {
						args[i] = "--controllers=" + v
					}
				}
				return args
			})
		}
		setControllers("*,-service")
		testutil.EventuallyCtx(t, 2*time.Minute, "the Service controller reported off by a leading CCM", func(context.Context) (bool, error) {
			st := l.Manager.Status()
			return !st[profile.Service] && st[profile.Node] && l.Manager.Identity() != "", nil
		})
		setControllers("*")
		testutil.EventuallyCtx(t, 2*time.Minute, "the Service controller reported on again", func(context.Context) (bool, error) {
			st := l.Manager.Status()
			return st[profile.Service] && st[profile.Node] && l.Manager.Identity() != "", nil
		})
	})

	t.Run("a bad flag crash-loops", func(t *testing.T) {
		var good []string
		editArgs(t, func(args []string) []string {
			good = slices.Clone(args)
			return append(args, "--no-such-flag")
		})
		testutil.EventuallyCtx(t, 2*time.Minute, "CrashLoopBackOff with restarts", func(ctx context.Context) (bool, error) {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			var seen []string
			for _, p := range pods.Items {
				if len(p.Status.ContainerStatuses) != 1 {
					seen = append(seen, fmt.Sprintf("%s: %s, no container status", p.Name, p.Status.Phase))
					continue
				}
				cs := p.Status.ContainerStatuses[0]
				if cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
					cs.LastTerminationState.Terminated != nil && strings.Contains(cs.LastTerminationState.Terminated.Message, "no-such-flag") {
					return true, nil
				}
				seen = append(seen, fmt.Sprintf("%s: restarts %d, state %+v, last %+v", p.Name, cs.RestartCount, cs.State, cs.LastTerminationState))
			}
			return false, fmt.Errorf("pods %v", seen)
		})
		if l.Manager.Identity() != "" || l.Manager.Status()[profile.Node] {
			t.Errorf("a crash-looping CCM leads: %q %v", l.Manager.Identity(), l.Manager.Status())
		}
		editArgs(t, func([]string) []string { return good })
		pod := runningPod(t, "")
		holder(t, pod)
	})

	// A flag outside the lab's range (controllers/argrules.go) crash-loops
	// the Pod with upstream's kind of sentence in its last state and in
	// kubectl logs --previous; nothing of what it asked for runs, so the
	// lab's memory stays where it was, and the page's switches answer at
	// once, with the reason, instead of waiting for a CCM that cannot
	// start.
	for _, tc := range []struct{ arg, want string }{
		{"--concurrent-service-syncs=1000000", "concurrent-service-syncs must be between 1 and 50, but got 1000000"},
		{"--leader-elect-retry-period=1ns", "leader-elect-retry-period must be between 1s and 2m0s, but got 1ns"},
	} {
		t.Run("bounded "+tc.arg, func(t *testing.T) {
			before := heapInUse()
			var good []string
			editArgs(t, func(args []string) []string {
				good = slices.Clone(args)
				return append(args, tc.arg)
			})
			t.Cleanup(func() {
				editArgs(t, func([]string) []string { return good })
				holder(t, runningPod(t, ""))
			})
			pod := crashLooping(t, selector, tc.want)
			logs, err := c.CoreV1().Pods(ns).GetLogs(pod.Name, &v1.PodLogOptions{Container: pod.Spec.Containers[0].Name, Previous: true}).DoRaw(ctx)
			if err != nil {
				t.Fatalf("kubectl logs --previous: %v", err)
			}
			if !strings.Contains(string(logs), "Error: "+tc.want) {
				t.Errorf("kubectl logs --previous does not say %q:\n%s", tc.want, tail(string(logs), 5))
			}
			if l.Manager.Identity() != "" {
				t.Errorf("a CCM leads with %s: %q", tc.arg, l.Manager.Identity())
			}
			start := time.Now()
			err = l.Manager.Disable(profile.Service)
			if err == nil || !strings.Contains(err.Error(), tc.want) || time.Since(start) > 10*time.Second {
				t.Errorf("a switch with the CCM crash-looping: %v after %s, want at once the reason %q", err, time.Since(start), tc.want)
			}
			if after := heapInUse(); after > before+50<<20 {
				t.Errorf("the lab's heap grew from %d MB to %d MB", before>>20, after>>20)
			}
		})
	}

	// Only the DaemonSet's Pod runs a CCM: a Pod with the CCM's image
	// anywhere else fails, saying why, and the DaemonSet's CCM keeps the
	// Lease, so the page's switches go on working. (A Pod naming the
	// DaemonSet as its owner with a made-up UID is deleted by the garbage
	// collector before it could show anything: app/sim
	// TestOnlyTheDaemonSetsPodRunsACCM covers it.)
	for _, tc := range []struct{ name, namespace string }{
		{"in default", "default"},
		{"in kube-system", ns},
	} {
		t.Run("a Pod with the CCM's image "+tc.name+" runs nothing", func(t *testing.T) {
			leader := runningPod(t, "")
			holder(t, leader)
			ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tmpl := ds.Spec.Template.Spec
			extra := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "second-ccm", Namespace: tc.namespace, Labels: map[string]string{"app": "second-ccm"}},
				Spec: v1.PodSpec{
					NodeName:    leader.Spec.NodeName,
					Tolerations: tmpl.Tolerations,
					Containers:  []v1.Container{{Name: "ccm", Image: tmpl.Containers[0].Image, Args: tmpl.Containers[0].Args}},
				},
			}
			if _, err := c.CoreV1().Pods(tc.namespace).Create(ctx, extra, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.CoreV1().Pods(tc.namespace).Delete(context.Background(), extra.Name, metav1.DeleteOptions{})
			})
			want := "ccmlab runs the cloud-controller-manager only as a Pod of DaemonSet kube-system/" + dsName
			testutil.EventuallyCtx(t, 2*time.Minute, "the second Pod crash-looping", func(ctx context.Context) (bool, error) {
				p, err := c.CoreV1().Pods(tc.namespace).Get(ctx, extra.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if len(p.Status.ContainerStatuses) != 1 {
					return false, fmt.Errorf("%s, no container status", p.Status.Phase)
				}
				cs := p.Status.ContainerStatuses[0]
				last := cs.LastTerminationState.Terminated
				if cs.RestartCount >= 1 && last != nil && strings.Contains(last.Message, want) {
					return true, nil
				}
				return false, fmt.Errorf("restarts %d, state %+v, last %+v", cs.RestartCount, cs.State, cs.LastTerminationState)
			})
			logs, err := c.CoreV1().Pods(tc.namespace).GetLogs(extra.Name, &v1.PodLogOptions{Previous: true}).DoRaw(ctx)
			if err != nil || !strings.Contains(string(logs), want) {
				t.Errorf("kubectl logs --previous of the second Pod: %v\n%s", err, tail(string(logs), 5))
			}
			holder(t, leader)
			start := time.Now()
			if err := l.Manager.Disable(profile.Service); err != nil {
				t.Fatalf("switching the Service controller off beside a second Pod: %v", err)
			}
			if err := l.Manager.Enable(profile.Service); err != nil {
				t.Fatalf("switching the Service controller on beside a second Pod: %v", err)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the switches took %s", d)
			}
		})
	}

	t.Run("without the toleration an uninitialized control plane stays so", func(t *testing.T) {
		// The deadlock the toleration prevents, as on a cluster's first
		// boot: the control-plane node carries the uninitialized taint
		// (every node of a --cloud-provider=external cluster registers with
		// it) and only the CCM removes it. Without the toleration the
		// DaemonSet controller creates no CCM Pod there (v1.37.2
		// pkg/controller/daemon nodeShouldRunDaemonPod), so nothing ever
		// removes the taint.
		uninit := kube.UninitializedTaint()
		setTolerates := func(on bool) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				spec := &ds.Spec.Template.Spec
				spec.Tolerations = slices.DeleteFunc(spec.Tolerations, func(tol v1.Toleration) bool { return tol.Key == uninit.Key })
				if on {
					spec.Tolerations = append(spec.Tolerations, v1.Toleration{Key: uninit.Key, Value: uninit.Value, Effect: uninit.Effect})
				}
				_, err = c.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		setTolerates(false)
		t.Cleanup(func() {
			if t.Failed() {
				setTolerates(true) // so that the tests after this one have a CCM
			}
		})
		old := runningPod(t, "") // an initialized node takes it all the same
		cp, err := c.CoreV1().Nodes().Get(ctx, old.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.CoreV1().Nodes().Get(ctx, cp.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = append(n.Spec.Taints, uninit)
			_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The barrier: the DaemonSet controller has seen the tainted node
		// and wants no Pod on it (kubectl get ds: DESIRED 0).
		testutil.EventuallyCtx(t, 2*time.Minute, "DESIRED 0 and no CCM Pod", func(ctx context.Context) (bool, error) {
			ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DesiredNumberScheduled == 0 && len(pods.Items) == 0,
				fmt.Errorf("desired %d, %d pods", ds.Status.DesiredNumberScheduled, len(pods.Items))
		})
		if id := l.Manager.Identity(); id != "" {
			t.Errorf("a CCM leads with no CCM Pod: %q", id)
		}
		n, err := c.CoreV1().Nodes().Get(ctx, cp.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(x v1.Taint) bool { return x.Key == uninit.Key }) {
			t.Fatal("the control-plane node lost the uninitialized taint with no CCM running")
		}

		// The toleration back: a Pod lands, its CCM initializes the node.
		setTolerates(true)
		runningPod(t, "")
		testutil.EventuallyCtx(t, 2*time.Minute, "the control-plane node initialized", func(ctx context.Context) (bool, error) {
			n, err := c.CoreV1().Nodes().Get(ctx, cp.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return !slices.ContainsFunc(n.Spec.Taints, func(x v1.Taint) bool { return x.Key == uninit.Key }), nil
		})
	})

	t.Run("a trimmed role fails the CCM with Forbidden", func(t *testing.T) {
		// Without leases in system:cloud-controller-manager the next CCM
		// cannot take the Lease: it leads nothing and says why in its log.
		roles := c.RbacV1().ClusterRoles()
		role, err := roles.Get(ctx, sim.CCMClusterRole, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// klog is the process's: send it where the kubelet serves the
		// CCM Pod's log from, as ccmlab serve does.
		controlplane.CaptureKlog(l.Logs, 0)
		full := role.DeepCopy()
		trimmed := role.DeepCopy()
		trimmed.Rules = slices.DeleteFunc(trimmed.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "leases") })
		if len(trimmed.Rules) == len(role.Rules) {
			t.Fatalf("the role has no rule for leases: %+v", role.Rules)
		}
		if _, err := roles.Update(ctx, trimmed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		old := runningPod(t, "")
		if err := c.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := runningPod(t, string(old.UID))
		testutil.Eventually(t, time.Minute, "Forbidden on the Lease in the CCM Pod's log", func() (bool, string) {
			// What kubectl logs of the Pod prints: the lab's kubelet serves
			// the CCM's klog from this store.
			lines := l.Logs.Lines(podlog.StaticKey(controlplane.ComponentCCM))
			for _, ln := range lines {
				// client-go's leaderelection.go logs it with the error quoted.
				if strings.Contains(ln.Text, "leaderelection.go") && strings.Contains(ln.Text, `leases.coordination.k8s.io \"cloud-controller-manager\" is forbidden`) {
					return true, ""
				}
			}
			if len(lines) == 0 {
				return false, "no log lines"
			}
			return false, "last line: " + lines[len(lines)-1].Text
		})
		if id := l.Manager.Identity(); id != "" {
			t.Errorf("a CCM leads without the right to its Lease: %q", id)
		}
		full.ResourceVersion = ""
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := roles.Get(ctx, sim.CCMClusterRole, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Rules = full.Rules
			_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		holder(t, pod)
	})
}

// crashLooping waits for a Pod of selector in CrashLoopBackOff whose last
// termination message says want, and returns it.
func crashLooping(t *testing.T, selector, want string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	testutil.EventuallyCtx(t, 2*time.Minute, "CrashLoopBackOff saying "+want, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		var seen []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if len(p.Status.ContainerStatuses) != 1 {
				seen = append(seen, fmt.Sprintf("%s: %s, no container status", p.Name, p.Status.Phase))
				continue
			}
			cs := p.Status.ContainerStatuses[0]
			last := cs.LastTerminationState.Terminated
			if cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
				last != nil && last.ExitCode == 1 && strings.Contains(last.Message, want) {
				pod = p
				return true, nil
			}
			seen = append(seen, fmt.Sprintf("%s: restarts %d, state %+v, last %+v", p.Name, cs.RestartCount, cs.State, cs.LastTerminationState))
		}
		return false, fmt.Errorf("pods %v", seen)
	})
	return pod
}

// heapInUse is the lab's heap in use after a collection: the lab runs in
// this test's process.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// editArgs rewrites the CCM container's arguments as kubectl edit would:
// on a conflict (the DaemonSet controller writes the status meanwhile) it
// reads the object again and retries.
func editArgs(t *testing.T, edit func([]string) []string) {
	t.Helper()
	dss := env.Client.AppsV1().DaemonSets(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := dss.Get(context.Background(), sim.CCMDaemonSetName(sim.DefaultLab().Profile), metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := &ds.Spec.Template.Spec.Containers[0]
		c.Args = edit(slices.Clone(c.Args))
		_, err = dss.Update(context.Background(), ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// currentRevision is the hash of the CCM DaemonSet's current template, as
// its Pods carry it (controller-revision-hash): that of its newest
// ControllerRevision, once the DaemonSet controller has seen the
// DaemonSet's latest generation ("" before).
func currentRevision(ctx context.Context) (string, error) {
	c := env.Client
	ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, sim.CCMDaemonSetName(sim.DefaultLab().Profile), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if ds.Status.ObservedGeneration != ds.Generation {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return "", err
	}
	revs, err := c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", err
	}
	var newest *appsv1.ControllerRevision
	for i := range revs.Items {
		r := &revs.Items[i]
		if metav1.IsControlledBy(r, ds) && (newest == nil || r.Revision > newest.Revision) {
			newest = r
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], nil
}
