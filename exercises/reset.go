package exercises

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/internal/labapi"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/kubelet"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// ResetCaller is how instances Reset launches appear in the call log.
const ResetCaller = "exercise-reset"

// Reset puts the lab into the exercise's starting state and clears the
// exercise's progress:
//
//  1. injected faults are cleared (IAM deny, throttling, failures; the
//     latency an instructor chose stays);
//  2. the exercise's objects are deleted and waited for; a Service's
//     load balancer is deleted by its controller, which is switched on for
//     that if needed;
//  3. the VMs a student launched (cloud.CallerUser) are terminated and
//     their Nodes deleted, and at least Setup.Nodes (or Config.Nodes)
//     instances run;
//  4. every controller and add-on is switched as Setup.Controllers says,
//     or back to its start-up default;
//  5. nodes are uncordoned or given the uninitialized taint if asked;
//  6. progress is cleared and the exercise's start time recorded;
//  7. Reset waits (up to Config.SettleTimeout) until the lab has settled:
//     enough Ready nodes, no uninitialized taint while the Node controller
//     runs, no Node left for a terminated VM while the node-lifecycle
//     controller runs;
//  8. the classroom pace (Setup.Latency) is set, and a mark in the history
//     says where the exercise's evidence starts.
//
// With Setup.FreshNodes every VM is replaced, after the Node controller is
// switched off, by a new one whose Node nobody has initialized.
func (s *Service) Reset(ctx context.Context, id string) error {
	return s.ResetWith(ctx, id, ResetOptions{})
}

// ResetOptions is the optional body of POST /api/exercises/{id}/reset
// (labapi).
type ResetOptions = labapi.ResetOptions

// ResetWith is Reset with options.
func (s *Service) ResetWith(ctx context.Context, id string, opts ResetOptions) error {
	ex, err := s.get(id)
	if err != nil {
		return err
	}
	if err := s.validateResetOptions(ex, opts); err != nil {
		return err
	}
	if why := s.availability(ex); why != "" {
		return fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ex.Steps) == 0 {
		// A quiz: the lab is left alone, only the answers go.
		if err := s.cfg.Store.Restart(ctx, id, s.cfg.Now()); err != nil {
			return err
		}
		s.markStart(id)
		return nil
	}
	return s.recordedReset(ctx, ex, opts, i18n.Text{})
}

// recordedReset runs the reset between two records in the progress store:
// "running" before it touches the lab (found at the next start, it says
// the lab stopped in the middle: FinishInterrupted), and how it ended
// after. Both clear the exercise's progress, answers and hidden causes, so
// a failed reset leaves the exercise at its start, with a note saying why,
// rather than with the previous round's marks over a lab that is not the
// exercise's. resumed, when set, is the note of a reset finished at start.
// Notes are kept in both languages (resetNote). Call with mu.
func (s *Service) recordedReset(ctx context.Context, ex *format.Exercise, opts ResetOptions, resumed i18n.Text) error {
	id := ex.ID
	keys := progressKeys(id)
	raw, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.BeginReset(ctx, id, keys, string(raw), s.cfg.Now()); err != nil {
		return fmt.Errorf("recording the reset: %w", err)
	}
	s.removed = nil
	err = s.resetLab(ctx, ex, opts)
	// The record is written even when ctx ended (a client gone, the
	// settle timeout): it is what the page shows next.
	rec := context.WithoutCancel(ctx)
	if err != nil {
		if ferr := s.cfg.Store.FailReset(rec, id, keys, string(raw), encodeNote(failedNote(err, s.cfg.SettleTimeout)), s.cfg.Now()); ferr != nil {
			s.cfg.Logger.Error("recording a failed reset", "exercise", id, "err", ferr)
		}
		// Evidence from before the failed reset no longer counts, and the
		// exercise is not checked by itself until a reset went through.
		seq := s.cfg.Env.History.Mark("reset-failed:" + id)
		s.runs[id] = &run{startSeq: seq, since: seq}
		if s.active == id {
			s.active = ""
		}
		return stopped(err)
	}
	state, note := "", ""
	if resumed.EN != "" {
		state, note = progress.ResetResumed, encodeNote(resumed)
	} else if len(s.removed) > 0 {
		state, note = progress.ResetDone, encodeNote(removedNote(s.removed))
	}
	if err := s.cfg.Store.EndReset(rec, id, state, note, s.cfg.Now()); err != nil {
		// The lab is reset but the record still says "running": the
		// exercise is not checked until a reset goes through.
		return stopped(fmt.Errorf("recording the reset: %w", err))
	}
	return nil
}

// progressKeys are the progress store's keys an exercise's reset clears:
// its own and, for the diagnosis challenge, the hidden cause.
func progressKeys(id string) []string {
	if id == MysteryID {
		return []string{id, hiddenKey}
	}
	return []string{id}
}

// resetLab is the reset proper (the steps listed on Reset). Call with mu.
func (s *Service) resetLab(ctx context.Context, ex *format.Exercise, opts ResetOptions) error {
	id := ex.ID
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SettleTimeout)
	defer cancel()
	env := s.cfg.Env

	if err := s.loadPace(ctx); err != nil { // pace.go
		return err
	}
	f := env.Cloud.Faults()
	latency := f.Latency
	if s.pace != nil && latency.Duration == s.pace.set {
		// The latency is still the one an earlier exercise set for its
		// pace: put back what was there before it.
		latency = cloud.Duration{Duration: s.pace.before}
	}
	if len(f.Deny) > 0 || f.QPS > 0 || len(f.FailNext) > 0 {
		s.removed = append(s.removed, i18n.Text{JA: "注入された障害 (拒否、スロットリング、失敗)", EN: "the injected faults (denials, throttling, failures)"})
	}
	if err := env.Cloud.SetFaults(cloud.Faults{Latency: latency}); err != nil {
		return fmt.Errorf("clearing faults: %w", err)
	}
	// Before any deletion: without it the Service controller cannot take
	// its finalizer off a Service (rbac.go).
	if err := s.restoreServiceControllerRBAC(ctx); err != nil {
		return err
	}
	if err := s.restoreCCMToleration(ctx); err != nil {
		return err
	}
	if r := s.cfg.RestoreSystem; r != nil {
		if err := r(ctx); err != nil {
			return err
		}
	}
	// Subnets tagged for another cluster (the subnet-tags exercise) would
	// put every later exercise's load balancer in one subnet.
	env.Cloud.RestoreSubnetTags()
	if err := s.deleteObjects(ctx, ex.Setup.Delete); err != nil {
		return err
	}
	if err := s.deleteOrphanedLoadBalancers(ctx, ex.Setup.Delete); err != nil {
		return err
	}
	if err := s.terminateLaunched(ctx); err != nil {
		return err
	}
	nodes := ex.Setup.Nodes
	if nodes == 0 {
		nodes = s.cfg.Nodes
	}
	if err := s.ensureInstances(ctx, nodes); err != nil {
		return err
	}
	want := s.desiredSwitches(ex)
	if err := s.applySwitches(want); err != nil {
		return err
	}
	if err := s.setLBCServiceWebhook(ctx, ex, want); err != nil {
		return err
	}
	if ex.Setup.Uncordon {
		if err := s.updateNodes(ctx, func(n *corev1.Node) bool {
			if !n.Spec.Unschedulable {
				return false
			}
			n.Spec.Unschedulable = false
			return true
		}); err != nil {
			return fmt.Errorf("uncordoning nodes: %w", err)
		}
	}
	if ex.Setup.FreshNodes {
		if err := s.freshNodes(ctx, nodes); err != nil {
			return err
		}
	}
	if ex.Setup.TaintNodes {
		// Wait for the nodes just launched to register, so each gets the
		// taint (they would carry it anyway: the Node controller is off).
		if err := s.waitFor(ctx, "nodes to register", func() (bool, string, error) { return s.enoughNodes(ctx, nodes) }); err != nil {
			return err
		}
		if err := s.updateNodes(ctx, func(n *corev1.Node) bool {
			if kube.HasUninitializedTaint(n) {
				return false
			}
			n.Spec.Taints = append(n.Spec.Taints, kube.UninitializedTaint())
			return true
		}); err != nil {
			return fmt.Errorf("tainting nodes: %w", err)
		}
	}
	if err := s.waitFor(ctx, "the lab to settle", func() (bool, string, error) { return s.settled(ctx, nodes, want, ex.Setup.FreshNodes) }); err != nil {
		return err
	}
	// The previous round's Events go last, once the controllers have said
	// what they had to about the deletions: a student reading the events
	// of the exercise's objects reads this round's only.
	if err := s.deleteEvents(ctx, ex.Setup.Delete); err != nil {
		return err
	}
	if err := s.extraReset(ctx, ex, opts); err != nil {
		return err
	}
	if d := ex.Setup.LatencyDuration(); d > 0 {
		cur := env.Cloud.Faults()
		before := cur.Latency.Duration
		if s.pace != nil && before == s.pace.set {
			before = s.pace.before
		}
		cur.Latency = cloud.Duration{Duration: d}
		if err := env.Cloud.SetFaults(cur); err != nil {
			return fmt.Errorf("setting the classroom pace: %w", err)
		}
		if err := s.setPace(ctx, &pace{set: d, before: before}); err != nil {
			return err
		}
	} else if s.pace != nil {
		if err := s.setPace(ctx, nil); err != nil {
			return err
		}
	}
	// Progress and the evidence start after everything the reset did, so
	// nothing of the reset counts as the student's.
	if err := s.cfg.Store.Restart(ctx, id, s.cfg.Now()); err != nil {
		return err
	}
	s.markStart(id)
	return nil
}

// pace is the latency a reset set for an exercise's classroom pace, and
// the one it replaced.
type pace struct{ set, before time.Duration }

// markStart records the exercise's start in the history. Call with mu.
func (s *Service) markStart(id string) {
	seq := s.cfg.Env.History.Mark("reset:" + id)
	s.runs[id] = &run{startSeq: seq, since: seq}
	s.active = id
}

// freshNodes replaces every running VM by a new one. The Node controller
// is off (format requires it), so the new Nodes stay as their kubelets
// registered them: tainted, no providerID, no cloud labels. The old Nodes
// are deleted with their VMs.
func (s *Service) freshNodes(ctx context.Context, n int) error {
	old := runningInstances(s.cfg.Env.Cloud)
	for range n {
		if _, err := s.cfg.Env.Cloud.RunInstance(cloud.WithCaller(ctx, ResetCaller), cloud.RunInstanceInput{}); err != nil {
			return fmt.Errorf("launching an instance: %w", err)
		}
	}
	nodes := s.cfg.Env.Client.CoreV1().Nodes()
	for _, inst := range old {
		if _, err := s.cfg.Env.Cloud.TerminateInstance(cloud.WithImmediateTransition(cloud.WithCaller(ctx, ResetCaller)), inst.ID); err != nil {
			return fmt.Errorf("terminating %s: %w", inst.ID, err)
		}
		if err := nodes.Delete(ctx, inst.PrivateDNSName, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting Node %s: %w", inst.PrivateDNSName, err)
		}
	}
	return nil
}

// setLBCServiceWebhook leaves the lbc add-on's Service webhook on only for
// an exercise that requires the add-on and has it running. With the
// webhook on, every new LoadBalancer Service gets the controller's class
// and never reaches the CCM's Service controller, which the other
// exercises are about; and with the controller scaled to 0 the webhook,
// which fails closed, would refuse every new Service. Off, a Service goes
// to the controller only by its class or annotations, as with the chart's
// enableServiceMutatorWebhook=false.
func (s *Service) setLBCServiceWebhook(ctx context.Context, ex *format.Exercise, want map[string]bool) error {
	if s.cfg.LBCServiceWebhook == nil {
		return nil
	}
	on := slices.Contains(ex.Setup.Requires, ccmnames.AddonLBC) && want[ccmnames.AddonLBC]
	changed, err := s.cfg.LBCServiceWebhook(ctx, on)
	if err != nil {
		return err
	}
	if changed && !on {
		s.removed = append(s.removed, i18n.Text{
			JA: "AWS Load Balancer Controller の Service webhook (この演習ではオフ: 新しい LoadBalancer Service は CCM の Service controller が担当します)",
			EN: "the AWS Load Balancer Controller's Service webhook (off for this exercise: new LoadBalancer Services go to the CCM's Service controller)"})
	}
	return nil
}

// desiredSwitches: the exercise's switches, else the start-up defaults.
func (s *Service) desiredSwitches(ex *format.Exercise) map[string]bool {
	want := map[string]bool{}
	for name := range s.cfg.Env.Controllers.Status() {
		on, ok := ex.Setup.Controllers[name]
		if !ok {
			on = name == ccmnames.AddonLBC || slices.Contains(s.cfg.Env.Profile.DefaultOn, name)
		}
		want[name] = on
	}
	return want
}

func (s *Service) applySwitches(want map[string]bool) error {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	status := s.cfg.Env.Controllers.Status()
	for _, name := range names {
		if status[name] == want[name] {
			continue
		}
		var err error
		if want[name] {
			err = s.cfg.Env.Controllers.Enable(name)
		} else {
			err = s.cfg.Env.Controllers.Disable(name)
		}
		if err != nil {
			return fmt.Errorf("switching %s: %w", name, err)
		}
	}
	return nil
}

func (s *Service) waitFor(ctx context.Context, what string, cond func() (bool, string, error)) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		ok, why, err := cond()
		last = why
		return ok, err
	})
	if err != nil {
		if last != "" {
			return fmt.Errorf("waiting for %s: %s: %w", what, last, err)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// deleteObjects deletes the exercise's objects and waits until they are
// gone, Pods included.
func (s *Service) deleteObjects(ctx context.Context, refs []format.ObjectRef) error {
	cs := s.cfg.Env.Client
	for _, ref := range refs {
		switch ref.Kind {
		case "Service":
			deleted, err := s.deleteService(ctx, ref.Name)
			if err != nil {
				return err
			}
			if !deleted {
				continue
			}
			if err := s.waitFor(ctx, "Service "+ref.Name+" to be deleted", func() (bool, string, error) {
				_, err := cs.CoreV1().Services(format.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, "its load balancer is still being deleted", err
			}); err != nil {
				return err
			}
		case "Deployment":
			d, err := cs.AppsV1().Deployments(format.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			sel := metav1.FormatLabelSelector(d.Spec.Selector)
			if err := cs.AppsV1().Deployments(format.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if err := s.waitFor(ctx, "Deployment "+ref.Name+" to be deleted", func() (bool, string, error) {
				_, err := cs.AppsV1().Deployments(format.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), "", ignoreNotFound(err)
			}); err != nil {
				return err
			}
			if err := s.deletePods(ctx, sel); err != nil {
				return err
			}
		case "Pod":
			if err := s.deletePods(ctx, "metadata.name="+ref.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteService deletes a Service of the exercise; it reports false when
// there was none. The Delete carries the resourceVersion it read:
// kube-apiserver v1.37 decides whether a Delete waits for finalizers on the
// object it read first and then removes what is stored, so a finalizer the
// Service controller adds in between would go with the Service and leave
// its load balancer behind (kubernetes/kubernetes#77988, docs/aws.md). With
// the precondition that turns into a Conflict, retried on the fresh object.
func (s *Service) deleteService(ctx context.Context, name string) (bool, error) {
	cs := s.cfg.Env.Client
	for {
		svc, err := cs.CoreV1().Services(format.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// Only the controller that put a finalizer on can take it off
		// (after deleting the load balancer): make sure it runs.
		status := s.cfg.Env.Controllers.Status()
		if slices.Contains(svc.Finalizers, flow.FinalizerLBCleanup) && !status[profile.Service] {
			if err := s.cfg.Env.Controllers.Enable(profile.Service); err != nil {
				return false, fmt.Errorf("switching the Service controller on to delete %s: %w", name, err)
			}
		}
		if slices.Contains(svc.Finalizers, ccmnames.LBCFinalizer) && !status[ccmnames.AddonLBC] {
			if err := s.cfg.Env.Controllers.Enable(ccmnames.AddonLBC); err != nil {
				return false, fmt.Errorf("switching the lbc add-on on to delete %s: %w", name, err)
			}
		}
		rv := svc.ResourceVersion
		err = cs.CoreV1().Services(format.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deletePods deletes, at once, the Pods a label selector (or, prefixed
// with "metadata.name=", a name) selects, and waits until they are gone.
func (s *Service) deletePods(ctx context.Context, selector string) error {
	opts := metav1.ListOptions{LabelSelector: selector}
	if name, ok := strings.CutPrefix(selector, "metadata.name="); ok {
		opts = metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	}
	pods := s.cfg.Env.Client.CoreV1().Pods(format.Namespace)
	return s.waitFor(ctx, "Pods "+selector+" to be deleted", func() (bool, string, error) {
		l, err := pods.List(ctx, opts)
		if err != nil {
			return false, "", err
		}
		for _, p := range l.Items {
			if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); ignoreNotFound(err) != nil {
				return false, "", err
			}
		}
		return len(l.Items) == 0, fmt.Sprintf("%d left", len(l.Items)), nil
	})
}

// runningInstances lists the running workers: the control-plane instance
// (lab/kubelet) is not one of the nodes an exercise counts.
func runningInstances(c *cloud.Cloud) []cloud.Instance {
	var out []cloud.Instance
	for _, inst := range c.Snapshot().Instances {
		if inst.State == cloud.InstanceRunning && !kubelet.IsControlPlane(inst) {
			out = append(out, inst)
		}
	}
	return out
}

// terminateLaunched takes back the VMs a student launched (the cloud
// panel, POST /api/cloud/instances): they are not the lab's nodes, and
// left running they change what the next exercise shows (a VM launched
// while the Route controller was off keeps routes' "no-route" failing).
// Their Nodes go with them, so the lab settles without waiting for the
// node-lifecycle controller, which may be off. The lab's own VMs (launched
// at start or by a reset), the control plane's, and those of state saved
// before the cloud recorded who launched what (LaunchedBy empty) stay.
func (s *Service) terminateLaunched(ctx context.Context) error {
	var names []string
	for _, inst := range s.cfg.Env.Cloud.Snapshot().Instances {
		if inst.State == cloud.InstanceTerminated || inst.LaunchedBy != cloud.CallerUser || kubelet.IsControlPlane(inst) {
			continue
		}
		if _, err := s.cfg.Env.Cloud.TerminateInstance(cloud.WithImmediateTransition(cloud.WithCaller(ctx, ResetCaller)), inst.ID); err != nil {
			return fmt.Errorf("terminating %s, launched during the exercise: %w", inst.ID, err)
		}
		s.removed = append(s.removed, i18n.Textf("VM %s (クラウドパネルか API で起動したもの)", "VM %s (launched from the cloud panel or the API)", inst.ID))
		names = append(names, inst.PrivateDNSName)
	}
	if len(names) == 0 {
		return nil
	}
	// A kubelet stops when it hears of its VM's termination, a moment
	// after the call: one that had not yet would register its Node again
	// right after a deletion. So the Nodes are deleted until two rounds in
	// a row find none.
	nodes := s.cfg.Env.Client.CoreV1().Nodes()
	clean := 0
	return s.waitFor(ctx, "the Nodes of the VMs launched during the exercise to go", func() (bool, string, error) {
		left := 0
		for _, name := range names {
			err := nodes.Delete(ctx, name, metav1.DeleteOptions{})
			switch {
			case err == nil:
				left++
			case !apierrors.IsNotFound(err):
				return false, "", fmt.Errorf("deleting Node %s: %w", name, err)
			}
		}
		if left > 0 {
			clean = 0
			return false, fmt.Sprintf("%d left", left), nil
		}
		clean++
		return clean >= 2, "", nil
	})
}

func (s *Service) ensureInstances(ctx context.Context, n int) error {
	missing := n - len(runningInstances(s.cfg.Env.Cloud))
	for range missing {
		if _, err := s.cfg.Env.Cloud.RunInstance(cloud.WithCaller(ctx, ResetCaller), cloud.RunInstanceInput{}); err != nil {
			return fmt.Errorf("launching an instance: %w", err)
		}
	}
	return nil
}

// updateNodes applies change to every Node, retrying on conflicts.
func (s *Service) updateNodes(ctx context.Context, change func(*corev1.Node) bool) error {
	nodes := s.cfg.Env.Client.CoreV1().Nodes()
	l, err := nodes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, item := range l.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := nodes.Get(ctx, item.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !change(n) {
				return nil
			}
			_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if ignoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// enoughNodes: every one of at least n running instances has a Ready Node.
func (s *Service) enoughNodes(ctx context.Context, n int) (bool, string, error) {
	l, err := s.cfg.Env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	byName := map[string]*corev1.Node{}
	for i := range l.Items {
		byName[l.Items[i].Name] = &l.Items[i]
	}
	ready := 0
	for _, inst := range runningInstances(s.cfg.Env.Cloud) {
		if node, ok := byName[inst.PrivateDNSName]; ok && kube.NodeReady(node) {
			ready++
		}
	}
	if ready < n {
		return false, fmt.Sprintf("%d of %d nodes Ready", ready, n), nil
	}
	return true, "", nil
}

func (s *Service) settled(ctx context.Context, n int, want map[string]bool, fresh bool) (bool, string, error) {
	if ok, why, err := s.enoughNodes(ctx, n); !ok || err != nil {
		return ok, why, err
	}
	l, err := s.cfg.Env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	for _, node := range l.Items {
		// The control-plane node was initialized when the lab started and
		// is never replaced: only the workers are fresh.
		if fresh && !isControlPlaneNode(&node) {
			inst, ok := s.cfg.Env.Cloud.LookupInstance(node.Name)
			if !ok || inst.State != cloud.InstanceRunning {
				return false, "node " + node.Name + " of a replaced VM is still there", nil
			}
			if node.Spec.ProviderID != "" || !kube.HasUninitializedTaint(&node) {
				return false, "node " + node.Name + " was initialized", nil
			}
		}
		if want[profile.Node] && kube.HasUninitializedTaint(&node) {
			return false, "node " + node.Name + " is not initialized yet", nil
		}
		if want[profile.NodeLifecycle] {
			inst, ok := s.cfg.Env.Cloud.LookupInstance(node.Name)
			if !ok || inst.State == cloud.InstanceTerminated {
				return false, "node " + node.Name + " of a terminated VM is still there", nil
			}
		}
	}
	return true, "", nil
}

// isControlPlaneNode: the embedded control plane's node (labelled as
// kubeadm labels it), which exercises leave alone.
func isControlPlaneNode(n *corev1.Node) bool {
	_, ok := n.Labels[kubelet.LabelControlPlane]
	return ok
}

// deleteOrphanedLoadBalancers deletes the load balancers still tagged for
// the exercise's Services once those are gone: a load balancer whose
// Service lost its finalizer by hand is left in the cloud by every
// controller (nobody owns it any more), and would fail the exercise's
// "the load balancer is gone" check for good.
func (s *Service) deleteOrphanedLoadBalancers(ctx context.Context, refs []format.ObjectRef) error {
	tags := map[string]bool{}
	for _, ref := range refs {
		if ref.Kind == "Service" {
			tags[format.Namespace+"/"+ref.Name] = true
		}
	}
	if len(tags) == 0 {
		return nil
	}
	// One list: the lab's own load balancers and the Classic ELBs and
	// NLBs of cloud-provider-aws and the lbc add-on, each deleted through
	// its own API.
	for _, lb := range s.cfg.Env.Cloud.LoadBalancerViews() {
		if !tags[cloud.TaggedService(lb.Tags)] {
			continue
		}
		del := s.cfg.Env.Cloud.DeleteLoadBalancer
		if lb.Kind != "" {
			del = s.cfg.Env.Cloud.DeleteAWSLoadBalancer
		}
		if err := del(cloud.WithCaller(ctx, ResetCaller), lb.Name); err != nil && !cloud.IsCode(err, cloud.ErrLBNotFound) {
			return fmt.Errorf("deleting the orphaned load balancer %s: %w", lb.Name, err)
		}
		s.removed = append(s.removed, i18n.Textf("Service のなくなったロードバランサー %s", "load balancer %s, whose Service was gone", lb.Name))
	}
	return nil
}

// deleteEvents deletes the Events about the exercise's objects (and what
// shares their name, as a Service's Endpoints) and, for a Deployment, its
// ReplicaSets' and Pods' (named after it).
func (s *Service) deleteEvents(ctx context.Context, refs []format.ObjectRef) error {
	if len(refs) == 0 {
		return nil
	}
	events := s.cfg.Env.Client.CoreV1().Events(format.Namespace)
	l, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	for _, e := range l.Items {
		if !aboutObjects(e.InvolvedObject, refs) {
			continue
		}
		if err := events.Delete(ctx, e.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting event %s: %w", e.Name, err)
		}
	}
	return nil
}

func aboutObjects(o corev1.ObjectReference, refs []format.ObjectRef) bool {
	for _, ref := range refs {
		switch {
		// By name, whatever the kind: `kubectl get events --field-selector
		// involvedObject.name=fin` also lists the Endpoints of Service fin.
		case o.Name == ref.Name:
			return true
		case ref.Kind == "Deployment" && (o.Kind == "ReplicaSet" || o.Kind == "Pod") && strings.HasPrefix(o.Name, ref.Name+"-"):
			return true
		}
	}
	return false
}

// removedNote says what a reset took away beyond the exercise's own
// objects (Setup.Delete, which the setup text names): VMs launched from the
// cloud panel or the API, orphaned load balancers, injected faults.
func removedNote(items []i18n.Text) i18n.Text {
	ja, en := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		ja[i], en[i] = it.JA, it.EN
	}
	return i18n.Text{
		JA: "このリセットは、演習のオブジェクトのほかに次のものを片付けました: " + strings.Join(ja, "、") + "。",
		EN: "Besides the exercise's own objects, this reset removed: " + strings.Join(en, ", ") + ".",
	}
}
