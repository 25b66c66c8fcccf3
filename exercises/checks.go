package exercises

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/controllers/lbc"
	"github.com/ccmlab/ccmlab/internal/kube"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Outcome is what one check found: whether it holds and, in both
// languages, what the lab looks like from where the check stands.
type Outcome struct {
	Pass   bool `json:"pass"`
	Detail Text `json:"detail"`
}

func passf(ja, en string, args ...any) Outcome {
	return Outcome{true, Text{fmt.Sprintf(ja, args...), fmt.Sprintf(en, args...)}}
}

func failf(ja, en string, args ...any) Outcome {
	return Outcome{false, Text{fmt.Sprintf(ja, args...), fmt.Sprintf(en, args...)}}
}

// errOutcome reports a failure to read the lab: the check does not hold.
func errOutcome(err error) Outcome {
	return failf("ラボの状態を読めませんでした: %v", "could not read the lab's state: %v", err)
}

// evalCtx is what a check runs with: the lab and when the exercise
// started (instances launched or terminated after it are "new").
type evalCtx struct {
	env   Env
	start time.Time
}

// checkKind is one named check: which parameters it takes and how it is
// evaluated.
type checkKind struct {
	// params the kind accepts; required ones are marked with a leading "!".
	params []string
	// enum restricts parameter values.
	enum map[string][]string
	eval func(ctx context.Context, e *evalCtx, c CheckSpec) Outcome
}

// checkKinds returns the table of kinds. It is built on each call so there
// is no package-level state.
func checkKinds() map[string]checkKind {
	nodesEnum := map[string][]string{"nodes": {"all", "new"}}
	return map[string]checkKind{
		"newNodes":               {[]string{"min"}, nil, evalNewNodes},
		"nodesInitialized":       {[]string{"nodes"}, nodesEnum, evalNodesInitialized},
		"nodeProviderID":         {[]string{"nodes"}, nodesEnum, evalNodeProviderID},
		"nodeAddresses":          {[]string{"nodes"}, nodesEnum, evalNodeAddresses},
		"nodeLabels":             {[]string{"nodes"}, nodesEnum, evalNodeLabels},
		"nodeTainted":            {[]string{"nodes"}, nodesEnum, evalNodeTainted},
		"nodesReady":             {[]string{"nodes"}, nodesEnum, evalNodesReady},
		"podsPending":            {[]string{"!selector", "reason"}, nil, evalPodsPending},
		"podsRunning":            {[]string{"!selector", "min"}, nil, evalPodsRunning},
		"serviceExternalIP":      {[]string{"!name", "!state"}, map[string][]string{"state": {"pending", "set"}}, evalServiceExternalIP},
		"serviceClass":           {[]string{"!name", "!class"}, nil, evalServiceClass},
		"serviceEvents":          {[]string{"!name", "!reasons", "message"}, nil, evalServiceEvents},
		"noControllerEvents":     {[]string{"!name"}, nil, evalNoControllerEvents},
		"serviceAnswers":         {[]string{"!name", "!via"}, map[string][]string{"via": {dataplane.KindClusterIP, dataplane.KindNodePort, dataplane.KindLoadBalancer}}, evalServiceAnswers},
		"serviceFlow":            {[]string{"!name", "step", "reason"}, nil, evalServiceFlow},
		"controllerEnabled":      {[]string{"!controller", "!enabled"}, map[string][]string{"controller": switchNames()}, evalControllerEnabled},
		"cloudDeny":              {[]string{"!action", "!denied"}, map[string][]string{"action": cloud.Actions()}, evalCloudDeny},
		"lbTargets":              {[]string{"!name", "!mode"}, map[string][]string{"mode": {"instance", "ip"}}, evalLBTargets},
		"extraHop":               {[]string{"!name", "!policy"}, map[string][]string{"policy": {dataplane.PolicyCluster, dataplane.PolicyLocal}}, evalExtraHop},
		"healthChecksFollowPods": {[]string{"!name"}, nil, evalHealthChecksFollowPods},
		"unevenLoad":             {[]string{"!name"}, nil, evalUnevenLoad},
		"routeForEveryNode":      {[]string{"nodes"}, nodesEnum, evalRouteForEveryNode},
		"nodeWithoutRoute":       {[]string{"nodes"}, nodesEnum, evalNodeWithoutRoute},
		"noStaleRoutes":          {nil, nil, evalNoStaleRoutes},
		"instanceTerminated":     {[]string{"nodes"}, nodesEnum, evalInstanceTerminated},
		"nodeNotReady":           {nil, nil, evalNodeNotReady},
		"nodeDeleted":            {[]string{"nodes"}, nodesEnum, evalNodeDeleted},
	}
}

// CheckKinds lists the check kinds, sorted.
func CheckKinds() []string {
	var names []string
	for k := range checkKinds() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// setParams returns the JSON names of the parameters a spec sets, with
// their values as strings (lists joined by commas).
func (c CheckSpec) setParams() map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "kind" || v.Field(i).IsZero() {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			out[name] = fmt.Sprint(f.Elem().Interface())
		case reflect.Slice:
			out[name] = strings.Join(f.Interface().([]string), ",")
		default:
			out[name] = fmt.Sprint(f.Interface())
		}
	}
	return out
}

func (c CheckSpec) validate() error {
	k, ok := checkKinds()[c.Kind]
	if !ok {
		return fmt.Errorf("unknown check kind %q (valid: %s)", c.Kind, strings.Join(CheckKinds(), ", "))
	}
	allowed := map[string]bool{}
	var errs []error
	set := c.setParams()
	for _, p := range k.params {
		name, required := strings.CutPrefix(p, "!")
		allowed[name] = true
		if _, ok := set[name]; required && !ok {
			errs = append(errs, fmt.Errorf("%s: parameter %q is required", c.Kind, name))
		}
	}
	for name, val := range set {
		if !allowed[name] {
			errs = append(errs, fmt.Errorf("%s: parameter %q does not apply", c.Kind, name))
			continue
		}
		if vals, ok := k.enum[name]; ok && !slices.Contains(vals, val) {
			errs = append(errs, fmt.Errorf("%s: %s %q (valid: %s)", c.Kind, name, val, strings.Join(vals, ", ")))
		}
	}
	if c.Min < 0 || c.Step < 0 || c.Step > 6 {
		errs = append(errs, fmt.Errorf("%s: min/step out of range", c.Kind))
	}
	if c.Selector != "" {
		if _, err := labels.Parse(c.Selector); err != nil {
			errs = append(errs, fmt.Errorf("%s: selector: %v", c.Kind, err))
		}
	}
	if c.Kind == "serviceFlow" && c.Step == 0 && c.Reason == "" {
		errs = append(errs, errors.New("serviceFlow: set step or reason"))
	}
	return errors.Join(errs...)
}

// evaluate runs one check. A check that cannot read the lab fails.
func (e *evalCtx) evaluate(ctx context.Context, c CheckSpec) Outcome {
	k, ok := checkKinds()[c.Kind]
	if !ok {
		return failf("未知のチェック %q", "unknown check %q", c.Kind)
	}
	return k.eval(ctx, e, c)
}

// ---- helpers ----

func (e *evalCtx) listNodes(ctx context.Context) ([]corev1.Node, error) {
	l, err := e.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

func (e *evalCtx) isNew(inst cloud.Instance) bool { return inst.LaunchTime.After(e.start) }

// selectNodes returns the Nodes a check looks at: all of them, or those
// whose instance was launched after the exercise started.
func (e *evalCtx) selectNodes(ctx context.Context, scope string) ([]corev1.Node, Outcome, bool) {
	nodes, err := e.listNodes(ctx)
	if err != nil {
		return nil, errOutcome(err), false
	}
	if scope == "new" {
		var out []corev1.Node
		for _, n := range nodes {
			if inst, ok := e.env.Cloud.LookupInstance(n.Name); ok && e.isNew(inst) {
				out = append(out, n)
			}
		}
		nodes = out
	}
	if len(nodes) == 0 {
		if scope == "new" {
			return nil, failf("演習を始めてから起動した VM の Node がまだありません。クラウドのパネルでインスタンスを起動してください。",
				"no Node yet for a VM launched since the exercise started: launch an instance in the cloud panel."), false
		}
		return nil, failf("Node が 1 つもありません。", "there are no Nodes at all."), false
	}
	return nodes, Outcome{}, true
}

// forEachNode fails with the first node for which bad returns a non-empty
// problem, and passes naming the nodes otherwise.
func (e *evalCtx) forEachNode(ctx context.Context, scope string, okJA, okEN string, bad func(n *corev1.Node) (ja, en string)) Outcome {
	nodes, o, ok := e.selectNodes(ctx, scope)
	if !ok {
		return o
	}
	var names []string
	for i := range nodes {
		if ja, en := bad(&nodes[i]); en != "" {
			return Outcome{false, Text{fmt.Sprintf("Node %s: %s", nodes[i].Name, ja), fmt.Sprintf("Node %s: %s", nodes[i].Name, en)}}
		}
		names = append(names, nodes[i].Name)
	}
	return passf(okJA+" (%s)", okEN+" (%s)", strings.Join(names, ", "))
}

func (e *evalCtx) instanceOf(n *corev1.Node) (cloud.Instance, bool) {
	return e.env.Cloud.LookupInstance(n.Name)
}

func (e *evalCtx) service(ctx context.Context, name string) (*corev1.Service, Outcome, bool) {
	svc, err := e.env.Client.CoreV1().Services(Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, failf("Service %s はまだありません。", "Service %s does not exist yet.", name), false
	}
	if err != nil {
		return nil, errOutcome(err), false
	}
	return svc, Outcome{}, true
}

// lbName is the name of the load balancer the Service's owner gives it.
func lbName(svc *corev1.Service) string {
	if svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == lbc.LoadBalancerClass {
		return lbc.LoadBalancerName(svc)
	}
	return cloudprovider.DefaultLoadBalancerName(svc)
}

func (e *evalCtx) loadBalancer(svc *corev1.Service) (cloud.LoadBalancer, Outcome, bool) {
	name := lbName(svc)
	lb, ok := e.env.Cloud.LookupLoadBalancer(name)
	if !ok {
		return lb, failf("クラウドにロードバランサー %s (Service %s 用) がありません。", "the cloud has no load balancer %s for Service %s.", name, svc.Name), false
	}
	return lb, Outcome{}, true
}

// events returns the Events about exactly this Service object (by UID, so
// events of an earlier Service with the same name do not count).
func (e *evalCtx) events(ctx context.Context, svc *corev1.Service) ([]corev1.Event, error) {
	l, err := e.env.Client.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(svc.UID)})
	if err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, ev := range l.Items {
		if ev.InvolvedObject.UID == svc.UID {
			out = append(out, ev)
		}
	}
	return out, nil
}

type endpoint struct{ IP, Node string }

// readyEndpoints reads the Service's EndpointSlices.
func (e *evalCtx) readyEndpoints(ctx context.Context, svc *corev1.Service) ([]endpoint, error) {
	l, err := e.env.Client.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []endpoint
	for _, s := range l.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, ip := range ep.Addresses {
				if !seen[ip] {
					seen[ip] = true
					out = append(out, endpoint{IP: ip, Node: ptrString(ep.NodeName)})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out, nil
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ingressOf(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if v := cmp.Or(in.Hostname, in.IP); v != "" {
			return v
		}
	}
	return ""
}

func summarize(tr dataplane.Trace) string {
	s := fmt.Sprintf("%d", tr.Status)
	if tr.Pod != "" {
		s += fmt.Sprintf(" pod=%s@%s", tr.Pod, tr.PodNode)
	}
	if tr.Error != "" {
		s += " (" + tr.Error + ")"
	}
	return s
}

// ---- nodes ----

func evalNewNodes(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	min := cmp.Or(c.Min, 1)
	nodes, o, ok := e.selectNodes(ctx, "new")
	if !ok {
		return o
	}
	if len(nodes) < min {
		return failf("新しい Node は %d 個です (%d 個必要)。", "%d new Node(s), %d needed.", len(nodes), min)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return passf("新しい Node: %s", "new Node(s): %s", strings.Join(names, ", "))
}

func (e *evalCtx) providerIDProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	want := e.env.Profile.ProviderID(profile.Machine{Zone: inst.Zone, InstanceID: inst.ID, NodeName: inst.PrivateDNSName})
	if n.Spec.ProviderID != want {
		if n.Spec.ProviderID == "" {
			return fmt.Sprintf("spec.providerID が空です (%s になるはず)", want), fmt.Sprintf("spec.providerID is empty (should become %s)", want)
		}
		return fmt.Sprintf("spec.providerID は %s (期待値 %s)", n.Spec.ProviderID, want), fmt.Sprintf("spec.providerID is %s, expected %s", n.Spec.ProviderID, want)
	}
	return "", ""
}

func (e *evalCtx) addressProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	if ip := kube.InternalIP(n); ip != inst.PrivateIP {
		if ip == "" {
			return "status.addresses に InternalIP がありません", "status.addresses has no InternalIP"
		}
		return fmt.Sprintf("InternalIP が %s (VM は %s)", ip, inst.PrivateIP), fmt.Sprintf("InternalIP is %s but the VM has %s", ip, inst.PrivateIP)
	}
	return "", ""
}

func (e *evalCtx) labelProblem(n *corev1.Node) (string, string) {
	inst, ok := e.instanceOf(n)
	if !ok {
		return "対応する VM がクラウドにありません", "no instance in the cloud has this name"
	}
	want := map[string]string{
		flow.LabelZone:         inst.Zone,
		flow.LabelRegion:       e.env.Cloud.Config().Region,
		flow.LabelInstanceType: inst.InstanceType,
	}
	for _, k := range []string{flow.LabelRegion, flow.LabelZone, flow.LabelInstanceType} {
		if got := n.Labels[k]; got != want[k] {
			return fmt.Sprintf("label %s が %q (期待値 %q)", k, got, want[k]), fmt.Sprintf("label %s is %q, expected %q", k, got, want[k])
		}
	}
	return "", ""
}

func evalNodesInitialized(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "providerID、アドレス、ラベルが書かれ、taint が外れています", "providerID, addresses and labels written, taint removed",
		func(n *corev1.Node) (string, string) {
			for _, f := range []func(*corev1.Node) (string, string){e.providerIDProblem, e.addressProblem, e.labelProblem} {
				if ja, en := f(n); en != "" {
					return ja, en
				}
			}
			if kube.HasUninitializedTaint(n) {
				return "uninitialized taint がまだ付いています", "still has the uninitialized taint"
			}
			return "", ""
		})
}

func evalNodeProviderID(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "providerID が VM を指しています", "providerID names the VM", e.providerIDProblem)
}

func evalNodeAddresses(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "InternalIP が VM のプライベート IP です", "InternalIP is the VM's private IP", e.addressProblem)
}

func evalNodeLabels(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "region/zone/instance-type のラベルがあります", "region, zone and instance-type labels are set", e.labelProblem)
}

func evalNodeTainted(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "uninitialized taint が残っています", "the uninitialized taint is still there",
		func(n *corev1.Node) (string, string) {
			if !kube.HasUninitializedTaint(n) {
				return "uninitialized taint がありません", "has no uninitialized taint"
			}
			return "", ""
		})
}

func evalNodesReady(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	return e.forEachNode(ctx, c.Nodes, "Ready です", "Ready",
		func(n *corev1.Node) (string, string) {
			if !kube.NodeReady(n) {
				return "Ready ではありません", "is not Ready"
			}
			return "", ""
		})
}

// ---- pods ----

func (e *evalCtx) pods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	l, err := e.env.Client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func schedulingMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

func evalPodsPending(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	pods, err := e.pods(ctx, c.Selector)
	if err != nil {
		return errOutcome(err)
	}
	if len(pods) == 0 {
		return failf("%s の Pod がありません。", "no Pods match %s.", c.Selector)
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			return failf("Pod %s は %s (node %q) で、Pending で待っていません。", "Pod %s is %s on node %q, not Pending.", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		msg := schedulingMessage(&p)
		if c.Reason != "" && !strings.Contains(strings.ToLower(msg), strings.ToLower(c.Reason)) {
			return failf("Pod %s は Pending ですが、スケジューラーの理由 %q に %q が含まれません。", "Pod %s is Pending, but the scheduler's reason %q does not mention %q.", p.Name, msg, c.Reason)
		}
	}
	return passf("%d 個の Pod が Pending: %s", "%d Pod(s) Pending: %s", len(pods), schedulingMessage(&pods[0]))
}

func evalPodsRunning(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	min := cmp.Or(c.Min, 1)
	pods, err := e.pods(ctx, c.Selector)
	if err != nil {
		return errOutcome(err)
	}
	running := 0
	for _, p := range pods {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if p.Status.Phase != corev1.PodRunning || !ready {
			return failf("Pod %s はまだ %s です。", "Pod %s is still %s.", p.Name, p.Status.Phase)
		}
		running++
	}
	if running < min {
		return failf("Running の Pod は %d 個です (%d 個必要)。", "%d Pod(s) Running, %d needed.", running, min)
	}
	return passf("%d 個の Pod が Running", "%d Pod(s) Running", running)
}

// ---- services ----

func evalServiceExternalIP(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return failf("Service %s の type は %s です (LoadBalancer ではありません)。", "Service %s is of type %s, not LoadBalancer.", c.Name, svc.Spec.Type)
	}
	in := ingressOf(svc)
	if c.State == "pending" {
		if in != "" {
			return failf("EXTERNAL-IP は %s で、<pending> ではありません。", "EXTERNAL-IP is %s, not <pending>.", in)
		}
		return passf("EXTERNAL-IP は <pending>: status.loadBalancer.ingress が空です", "EXTERNAL-IP is <pending>: status.loadBalancer.ingress is empty")
	}
	if in == "" {
		return failf("EXTERNAL-IP はまだ <pending> です。", "EXTERNAL-IP is still <pending>.")
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	if in != lb.DNSName && in != lb.IP {
		return failf("EXTERNAL-IP %s がクラウドのロードバランサー %s (%s) と一致しません。", "EXTERNAL-IP %s does not match load balancer %s (%s).", in, lb.Name, cmp.Or(lb.DNSName, lb.IP))
	}
	return passf("EXTERNAL-IP %s (ロードバランサー %s)", "EXTERNAL-IP %s (load balancer %s)", in, lb.Name)
}

func evalServiceClass(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	got := ptrString(svc.Spec.LoadBalancerClass)
	if got != c.Class {
		return failf("spec.loadBalancerClass は %q です (%q のはず)。", "spec.loadBalancerClass is %q, expected %q.", got, c.Class)
	}
	return passf("spec.loadBalancerClass = %s", "spec.loadBalancerClass = %s", got)
}

func evalServiceEvents(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	evs, err := e.events(ctx, svc)
	if err != nil {
		return errOutcome(err)
	}
	var found []string
	for _, r := range c.Reasons {
		hit := false
		for _, ev := range evs {
			if ev.Reason == r && (c.Message == "" || strings.Contains(ev.Message, c.Message)) {
				hit = true
				found = append(found, r)
				break
			}
		}
		if !hit {
			if c.Message != "" {
				return failf("Service %[1]s に、%[3]q を含むイベント %[2]s がありません。", "Service %s has no %s event mentioning %q.", c.Name, r, c.Message)
			}
			return failf("Service %s にイベント %s がありません。", "Service %s has no %s event.", c.Name, r)
		}
	}
	return passf("イベント: %s", "events: %s", strings.Join(found, ", "))
}

func evalNoControllerEvents(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	all, err := e.events(ctx, svc)
	if err != nil {
		return errOutcome(err)
	}
	// The apiserver's own repair loops (ClusterIP, NodePort) may report on
	// a brand-new Service; they are not a controller watching it for a
	// load balancer.
	evs := slices.DeleteFunc(all, func(ev corev1.Event) bool {
		return strings.HasSuffix(cmp.Or(ev.ReportingController, ev.Source.Component), "-repair-controller")
	})
	if len(evs) > 0 {
		return failf("Service %s にはイベント %s (%s) があります: 誰かが見ています。", "Service %s has event %s from %s: someone is watching it.", c.Name, evs[0].Reason, cmp.Or(evs[0].ReportingController, evs[0].Source.Component))
	}
	return passf("Service %s にコントローラーからのイベントはありません", "Service %s has no events from a controller", c.Name)
}

func evalServiceAnswers(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	if len(svc.Spec.Ports) == 0 {
		return failf("Service %s にポートがありません。", "Service %s has no ports.", c.Name)
	}
	port := svc.Spec.Ports[0]
	var reqs []dataplane.Request
	switch c.Via {
	case dataplane.KindClusterIP:
		reqs = append(reqs, dataplane.Request{Kind: c.Via, IP: svc.Spec.ClusterIP, Port: port.Port})
	case dataplane.KindNodePort:
		if port.NodePort == 0 {
			return failf("Service %s に NodePort がありません。", "Service %s has no NodePort.", c.Name)
		}
		nodes, err := e.listNodes(ctx)
		if err != nil {
			return errOutcome(err)
		}
		for _, n := range nodes {
			if kube.NodeReady(&n) {
				reqs = append(reqs, dataplane.Request{Kind: c.Via, Node: n.Name, Port: port.NodePort})
			}
		}
	case dataplane.KindLoadBalancer:
		lb, o, ok := e.loadBalancer(svc)
		if !ok {
			return o
		}
		reqs = append(reqs, dataplane.Request{Kind: c.Via, LB: lb.Name, Port: port.Port})
	}
	if len(reqs) == 0 {
		return failf("リクエストを送れる Ready な Node がありません。", "no Ready node to send a request to.")
	}
	var last string
	for _, r := range reqs {
		tr, err := e.env.Dataplane.Do(ctx, r)
		if err != nil {
			last = err.Error()
			continue
		}
		if tr.Status == 200 {
			where := cmp.Or(r.Node, r.LB, fmt.Sprintf("%s:%d", r.IP, r.Port))
			return passf("%s (%s) へのリクエストに Pod %s が 200 で応答しました", "a request to %s (%s) got 200 from Pod %s", c.Via, where, tr.Pod)
		}
		last = summarize(tr)
	}
	return failf("%s へのリクエストが通りませんでした: %s", "a request via %s did not get through: %s", c.Via, last)
}

func evalServiceFlow(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	key := Namespace + "/" + c.Name
	f, ok := e.env.Flow.ServiceFlow(key)
	if !ok {
		return failf("Service %s のフローがまだありません。", "no flow for Service %s yet.", c.Name)
	}
	if c.Step > 0 && f.Step < c.Step {
		return failf("フローはステップ %d までです (%d が必要)。", "the flow is at step %d, step %d needed.", f.Step, c.Step)
	}
	if c.Reason != "" {
		if f.Stuck == nil || f.Stuck.Reason != c.Reason {
			got := "none"
			if f.Stuck != nil {
				got = f.Stuck.Reason
			}
			return failf("フローの止まっている理由は %s です (%s のはず)。", "the flow's stuck reason is %s, expected %s.", got, c.Reason)
		}
		return passf("フローはステップ %d で止まっています: %s", "the flow is stuck after step %d: %s", f.Step, f.Stuck.Message)
	}
	return passf("フローはステップ %d まで進みました", "the flow reached step %d", f.Step)
}

// ---- switches and faults ----

func evalControllerEnabled(_ context.Context, e *evalCtx, c CheckSpec) Outcome {
	on, ok := e.env.Controllers.Status()[c.Controller]
	if !ok {
		return failf("このラボには %s controller がありません。", "this lab has no %s controller.", c.Controller)
	}
	word := func(b bool) (string, string) {
		if b {
			return "オン", "on"
		}
		return "オフ", "off"
	}
	onJA, onEN := word(on)
	if want := *c.Enabled; on != want {
		wantJA, wantEN := word(want)
		return Outcome{false, Text{
			fmt.Sprintf("%s controller は%sです (%sにしてください)。", c.Controller, onJA, wantJA),
			fmt.Sprintf("the %s controller is %s; switch it %s.", c.Controller, onEN, wantEN),
		}}
	}
	return Outcome{true, Text{
		fmt.Sprintf("%s controller は%sです", c.Controller, onJA),
		fmt.Sprintf("the %s controller is %s", c.Controller, onEN),
	}}
}

func evalCloudDeny(_ context.Context, e *evalCtx, c CheckSpec) Outcome {
	denied := slices.Contains(e.env.Cloud.Faults().Deny, c.Action)
	if denied != *c.Denied {
		if denied {
			return failf("IAM はまだ %s を拒否しています。", "IAM still denies %s.", c.Action)
		}
		return failf("IAM は %s を拒否していません。", "IAM does not deny %s.", c.Action)
	}
	if denied {
		return passf("IAM が %s を拒否しています", "IAM denies %s", c.Action)
	}
	return passf("IAM は %s を許可しています", "IAM allows %s", c.Action)
}

// ---- load balancers ----

func evalLBTargets(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	if string(lb.TargetType) != c.Mode {
		return failf("ロードバランサー %s は %s モードです (%s のはず)。", "load balancer %s is in %s mode, expected %s.", lb.Name, lb.TargetType, c.Mode)
	}
	if len(lb.Targets) == 0 {
		return failf("ロードバランサー %s にターゲットがありません。", "load balancer %s has no targets.", lb.Name)
	}
	var ids []string
	for _, t := range lb.Targets {
		ids = append(ids, fmt.Sprintf("%s:%d", t.ID, t.Port))
	}
	if c.Mode == "ip" {
		eps, err := e.readyEndpoints(ctx, svc)
		if err != nil {
			return errOutcome(err)
		}
		want := map[string]bool{}
		for _, ep := range eps {
			want[ep.IP] = true
		}
		got := map[string]bool{}
		for _, t := range lb.Targets {
			got[t.ID] = true
		}
		if len(want) == 0 || !reflect.DeepEqual(want, got) {
			return failf("ターゲット %s が Pod の IP %v と一致しません。", "targets %s do not match the Pod IPs %v.", strings.Join(ids, " "), keys(want))
		}
		return passf("ip モード: ターゲットは Pod の IP %s", "ip mode: the targets are the Pod IPs %s", strings.Join(ids, " "))
	}
	var nodePort int32
	if len(svc.Spec.Ports) > 0 {
		nodePort = svc.Spec.Ports[0].NodePort
	}
	for _, t := range lb.Targets {
		inst, ok := e.env.Cloud.LookupInstance(t.ID)
		if !ok {
			return failf("ターゲット %s は VM ではありません。", "target %s is not an instance.", t.ID)
		}
		if t.Port != nodePort {
			return failf("ターゲット %s のポート %d が NodePort %d ではありません。", "target %s uses port %d, not the NodePort %d.", inst.ID, t.Port, nodePort)
		}
	}
	return passf("instance モード: ターゲットは各ノードの NodePort %d (%s)", "instance mode: the targets are the nodes on NodePort %d (%s)", nodePort, strings.Join(ids, " "))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func evalExtraHop(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, o, ok := e.service(ctx, c.Name)
	if !ok {
		return o
	}
	policy := string(svc.Spec.ExternalTrafficPolicy)
	if policy == "" {
		policy = dataplane.PolicyCluster
	}
	if policy != c.Policy {
		return failf("externalTrafficPolicy は %s です (%s にしてください)。", "externalTrafficPolicy is %s; set it to %s.", policy, c.Policy)
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return o
	}
	n := min(max(2*len(lb.Targets), 4), 12)
	var ok200, extra, violations int
	var sample dataplane.Trace
	var last string
	for range n {
		tr, err := e.env.Dataplane.Do(ctx, dataplane.Request{Kind: dataplane.KindLoadBalancer, LB: lb.Name})
		if err != nil {
			last = err.Error()
			continue
		}
		last = summarize(tr)
		if tr.Status != 200 {
			continue
		}
		ok200++
		if tr.ExtraHop {
			extra++
		}
		kept := tr.SourceIPSeenByPod == tr.ClientIP
		switch c.Policy {
		case dataplane.PolicyCluster:
			if tr.ExtraHop && !kept {
				sample = tr
			}
		case dataplane.PolicyLocal:
			if tr.ExtraHop || !kept {
				violations++
				sample = tr
			}
		}
	}
	if ok200 == 0 {
		return failf("%d 回のリクエストのどれも 200 になりませんでした: %s", "none of %d requests got 200: %s", n, last)
	}
	if c.Policy == dataplane.PolicyCluster {
		if sample.ID == "" {
			return failf("%d 回のうち余計なホップは 0 回でした。Pod の数を Node より少なくしてください。", "none of %d requests took an extra hop: run fewer Pods than nodes.", ok200)
		}
		return passf("%[2]d 回中 %[1]d 回が別ノードの Pod へ 1 ホップ余計に転送され、Pod には送信元 %[3]s (ノードの IP) が見えました",
			"%d of %d requests took the extra hop to a Pod on another node, and the Pod saw source %s (a node's IP)", extra, ok200, sample.SourceIPSeenByPod)
	}
	if violations > 0 {
		return failf("%d 回が余計なホップを通ったか、送信元 IP が書き換えられました (例: Pod が見た送信元 %s)。", "%d request(s) took an extra hop or lost the client IP (e.g. the Pod saw %s).", violations, sample.SourceIPSeenByPod)
	}
	return passf("%d 回とも余計なホップなしで、Pod はクライアントの IP を見ました", "all %d requests went without an extra hop, and the Pod saw the client's IP", ok200)
}

// localCounts maps node name -> ready endpoints of svc on it.
func localCounts(eps []endpoint) map[string]int {
	m := map[string]int{}
	for _, ep := range eps {
		m[ep.Node]++
	}
	return m
}

func (e *evalCtx) localService(ctx context.Context, name string) (*corev1.Service, cloud.LoadBalancer, map[string]int, Outcome, bool) {
	svc, o, ok := e.service(ctx, name)
	if !ok {
		return nil, cloud.LoadBalancer{}, nil, o, false
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil, cloud.LoadBalancer{}, nil, failf("externalTrafficPolicy が Local ではありません。", "externalTrafficPolicy is not Local."), false
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return nil, cloud.LoadBalancer{}, nil, o, false
	}
	eps, err := e.readyEndpoints(ctx, svc)
	if err != nil {
		return nil, cloud.LoadBalancer{}, nil, errOutcome(err), false
	}
	return svc, lb, localCounts(eps), Outcome{}, true
}

func evalHealthChecksFollowPods(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	svc, lb, counts, o, ok := e.localService(ctx, c.Name)
	if !ok {
		return o
	}
	if lb.HealthCheck == nil || lb.HealthCheck.Port != svc.Spec.HealthCheckNodePort {
		return failf("ヘルスチェックが healthCheckNodePort %d を見ていません。", "the health check does not probe healthCheckNodePort %d.", svc.Spec.HealthCheckNodePort)
	}
	var healthy, unhealthy []string
	for _, t := range lb.Targets {
		if t.Health == cloud.TargetUnused {
			continue
		}
		inst, ok := e.env.Cloud.LookupInstance(t.ID)
		if !ok {
			continue
		}
		node := inst.PrivateDNSName
		want := cloud.TargetUnhealthy
		if counts[node] > 0 {
			want = cloud.TargetHealthy
		}
		if t.Health != want {
			return failf("%s (Pod %d 個) のターゲットは %s です (%s になるはず)。少し待ってもう一度。", "the target on %s (%d local Pods) is %s, should be %s; wait a moment.", node, counts[node], t.Health, want)
		}
		if want == cloud.TargetHealthy {
			healthy = append(healthy, node)
		} else {
			unhealthy = append(unhealthy, node)
		}
	}
	if len(unhealthy) == 0 {
		return failf("Pod の居ないノードがありません: すべてのターゲットが healthy です。", "every node has a Pod, so every target is healthy: run fewer Pods than nodes.")
	}
	if len(healthy) == 0 {
		return failf("healthy なターゲットがありません。", "no target is healthy.")
	}
	return passf("Pod の居るノード (%s) は healthy、居ないノード (%s) は unhealthy (port %d)", "nodes with a Pod (%s) are healthy, nodes without (%s) unhealthy (port %d)",
		strings.Join(healthy, ", "), strings.Join(unhealthy, ", "), svc.Spec.HealthCheckNodePort)
}

func evalUnevenLoad(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	_, lb, counts, o, ok := e.localService(ctx, c.Name)
	if !ok {
		return o
	}
	// The load balancer splits evenly over its healthy targets; each node
	// splits its share over its own Pods.
	var nodes []string
	for _, t := range lb.Targets {
		if t.Health != cloud.TargetHealthy {
			continue
		}
		if inst, ok := e.env.Cloud.LookupInstance(t.ID); ok && counts[inst.PrivateDNSName] > 0 {
			nodes = append(nodes, inst.PrivateDNSName)
		}
	}
	if len(nodes) < 2 {
		return failf("Pod の居る healthy なノードが %d 個しかありません。", "only %d healthy node(s) with Pods.", len(nodes))
	}
	var parts []string
	hi, lo := 0.0, 1.0
	for _, n := range nodes {
		share := 1 / float64(len(nodes)) / float64(counts[n])
		hi, lo = max(hi, share), min(lo, share)
		parts = append(parts, fmt.Sprintf("%s: %d Pod × %.0f%%", n, counts[n], share*100))
	}
	if hi/lo < 1.5 {
		return failf("負荷は均等です (%s)。ノードの数より 1 つ多いレプリカにしてください。", "the load is even (%s): scale to one more replica than there are nodes.", strings.Join(parts, ", "))
	}
	return passf("Pod あたりの負荷が偏っています: %s", "the load per Pod is uneven: %s", strings.Join(parts, ", "))
}

// ---- routes ----

func (e *evalCtx) routesByCIDR() map[string]cloud.Route {
	m := map[string]cloud.Route{}
	for _, r := range e.env.Cloud.Snapshot().Routes {
		m[r.DestinationCIDR] = r
	}
	return m
}

func routeActive(c *cloud.Cloud, r cloud.Route) bool {
	inst, ok := c.LookupInstance(r.InstanceID)
	return ok && inst.State == cloud.InstanceRunning
}

func evalRouteForEveryNode(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	routes := e.routesByCIDR()
	nodes, o, ok := e.selectNodes(ctx, c.Nodes)
	if !ok {
		return o
	}
	var rows []string
	for _, n := range nodes {
		inst, ok := e.instanceOf(&n)
		if !ok || inst.State != cloud.InstanceRunning {
			continue // its VM is gone; the Node will be
		}
		if n.Spec.PodCIDR == "" {
			return failf("Node %s に podCIDR がまだありません。", "Node %s has no podCIDR yet.", n.Name)
		}
		r, ok := routes[n.Spec.PodCIDR]
		if !ok {
			return failf("ルートテーブルに %s (Node %s) の行がありません。", "the route table has no row for %s (Node %s).", n.Spec.PodCIDR, n.Name)
		}
		if r.InstanceID != inst.ID || !routeActive(e.env.Cloud, r) {
			return failf("%s の行は %s を指していて active ではありません。", "the row for %s points at %s and is not active.", n.Spec.PodCIDR, r.InstanceID)
		}
		rows = append(rows, n.Spec.PodCIDR+" → "+inst.ID)
	}
	if len(rows) == 0 {
		return failf("動いている VM の Node がありません。", "no Node on a running VM.")
	}
	return passf("各 Node の podCIDR に経路があります: %s", "every Node's podCIDR has a route: %s", strings.Join(rows, ", "))
}

func evalNodeWithoutRoute(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	routes := e.routesByCIDR()
	return e.forEachNode(ctx, c.Nodes, "podCIDR はありますが、経路はまだありません", "has a podCIDR but no route yet",
		func(n *corev1.Node) (string, string) {
			if n.Spec.PodCIDR == "" {
				return "podCIDR がまだありません", "has no podCIDR yet"
			}
			if _, ok := routes[n.Spec.PodCIDR]; ok {
				return fmt.Sprintf("%s の経路がもうあります (Route controller が動いています)", n.Spec.PodCIDR), fmt.Sprintf("a route for %s already exists (the Route controller is running)", n.Spec.PodCIDR)
			}
			return "", ""
		})
}

func evalNoStaleRoutes(ctx context.Context, e *evalCtx, _ CheckSpec) Outcome {
	nodes, err := e.listNodes(ctx)
	if err != nil {
		return errOutcome(err)
	}
	owner := map[string]string{} // podCIDR -> node
	for _, n := range nodes {
		if n.Spec.PodCIDR != "" {
			owner[n.Spec.PodCIDR] = n.Name
		}
	}
	routes := e.env.Cloud.Snapshot().Routes
	for _, r := range routes {
		node, ok := owner[r.DestinationCIDR]
		if !ok {
			return failf("行 %s → %s に対応する Node がありません。", "row %s → %s belongs to no Node.", r.DestinationCIDR, r.InstanceID)
		}
		if !routeActive(e.env.Cloud, r) {
			return failf("行 %s → %s (Node %s) の VM は動いていません (blackhole)。", "row %s → %s (Node %s) points at a VM that is not running (blackhole).", r.DestinationCIDR, r.InstanceID, node)
		}
	}
	return passf("ルートテーブルの %d 行はどれも動いている Node のものです", "all %d rows of the route table belong to running Nodes", len(routes))
}

// ---- instances and node lifecycle ----

// terminatedSince lists instances terminated after the exercise started
// (and, for scope "new", also launched after it).
func (e *evalCtx) terminatedSince(scope string) []cloud.Instance {
	var out []cloud.Instance
	for _, inst := range e.env.Cloud.Snapshot().Instances {
		if inst.State != cloud.InstanceTerminated || !inst.StateTransitionTime.After(e.start) {
			continue
		}
		if scope == "new" && !e.isNew(inst) {
			continue
		}
		out = append(out, inst)
	}
	return out
}

func noTerminated(scope string) Outcome {
	if scope == "new" {
		return failf("演習中に起動した VM はまだ終了 (terminate) されていません。", "no VM launched during the exercise has been terminated yet.")
	}
	return failf("演習を始めてから終了 (terminate) された VM はまだありません。", "no VM has been terminated since the exercise started.")
}

func evalInstanceTerminated(_ context.Context, e *evalCtx, c CheckSpec) Outcome {
	insts := e.terminatedSince(c.Nodes)
	if len(insts) == 0 {
		return noTerminated(c.Nodes)
	}
	return passf("VM %s (%s) は terminated です", "VM %s (%s) is terminated", insts[0].ID, insts[0].PrivateDNSName)
}

func evalNodeNotReady(ctx context.Context, e *evalCtx, _ CheckSpec) Outcome {
	insts := e.terminatedSince("all")
	if len(insts) == 0 {
		return noTerminated("all")
	}
	for _, inst := range insts {
		n, err := e.env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return errOutcome(err)
		}
		if !kube.NodeReady(n) {
			return passf("VM %s は消えましたが、Node %s は NotReady のまま残っています", "VM %s is gone, and Node %s is left behind, NotReady", inst.ID, n.Name)
		}
		return failf("Node %s はまだ Ready です。kubelet の応答が止まってから約 10 秒待ってください。", "Node %s is still Ready: wait about 10 s after its kubelet stopped.", n.Name)
	}
	return failf("終了した VM の Node はもう削除されています。node-lifecycle controller をオフにしてからやり直してください。", "the terminated VM's Node is already deleted: switch the node-lifecycle controller off first, then try again.")
}

func evalNodeDeleted(ctx context.Context, e *evalCtx, c CheckSpec) Outcome {
	insts := e.terminatedSince(c.Nodes)
	if len(insts) == 0 {
		return noTerminated(c.Nodes)
	}
	var names []string
	for _, inst := range insts {
		_, err := e.env.Client.CoreV1().Nodes().Get(ctx, inst.PrivateDNSName, metav1.GetOptions{})
		if err == nil {
			return failf("終了した VM の Node %s がまだ残っています。", "Node %s of a terminated VM is still there.", inst.PrivateDNSName)
		}
		if !apierrors.IsNotFound(err) {
			return errOutcome(err)
		}
		names = append(names, inst.PrivateDNSName)
	}
	return passf("終了した VM の Node は削除されました: %s", "the Nodes of terminated VMs were deleted: %s", strings.Join(names, ", "))
}
