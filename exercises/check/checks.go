package check

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

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// Outcome is what one check found: whether it holds and, in both
// languages, what the lab looks like from where the check stands.
type Outcome struct {
	Pass   bool      `json:"pass"`
	Detail i18n.Text `json:"detail"`
}

func passf(ja, en string, args ...any) Outcome {
	return Outcome{true, i18n.Textf(ja, en, args...)}
}

func failf(ja, en string, args ...any) Outcome {
	return Outcome{false, i18n.Textf(ja, en, args...)}
}

// errOutcome reports a failure to read the lab: the check does not hold.
func errOutcome(err error) Outcome {
	return failf("ラボの状態を読めませんでした: %v", "could not read the lab's state: %v", err)
}

// Input is what a step's checks are evaluated with, besides the lab.
type Input struct {
	// Start is when the exercise was reset: instances launched or
	// terminated after it are "new".
	Start time.Time
	// StartSeq is the history mark of the reset.
	StartSeq uint64
	// Since is the history Seq after which evidence counts: the Seq when
	// the previous step passed (StartSeq for the first step).
	Since uint64
	// Exercise and Step name the step being checked.
	Exercise, Step string
}

// evalCtx is what a check runs with: the lab, the exercise's start and the
// history since the previous step passed.
type evalCtx struct {
	env   Env
	start time.Time
	in    Input
	// hist is the history after in.Since, read once per evaluation;
	// histErr says it is incomplete (the ring wrapped).
	hist    []history.Entry
	histErr error
	// fromStart is the history after in.StartSeq, read when first needed.
	fromStart    []history.Entry
	fromStartErr error
	readStart    bool
}

// checkKind is one named check: which parameters it takes and how it is
// evaluated.
type checkKind struct {
	// params the kind accepts; required ones are marked with a leading "!".
	params []string
	// enum restricts parameter values.
	enum map[string][]string
	eval func(ctx context.Context, e *evalCtx, c format.CheckSpec) Outcome
	// evidence: the kind passes only on something recorded in the history
	// after Input.Since (a step needs one such check, or an answer).
	evidence bool
}

// checkKinds returns the table of kinds. It is built on each call so there
// is no package-level state.
func checkKinds() map[string]checkKind {
	nodesEnum := map[string][]string{"nodes": {"all", "new", "workers"}}
	m := map[string]checkKind{
		"newNodes":               {[]string{"min"}, nil, evalNewNodes, false},
		"nodesInitialized":       {[]string{"nodes"}, nodesEnum, evalNodesInitialized, false},
		"nodeProviderID":         {[]string{"nodes"}, nodesEnum, evalNodeProviderID, false},
		"nodeAddresses":          {[]string{"nodes"}, nodesEnum, evalNodeAddresses, false},
		"nodeLabels":             {[]string{"nodes"}, nodesEnum, evalNodeLabels, false},
		"nodeTainted":            {[]string{"nodes"}, nodesEnum, evalNodeTainted, false},
		"nodesReady":             {[]string{"nodes"}, nodesEnum, evalNodesReady, false},
		"podsPending":            {[]string{"!selector", "reason"}, nil, evalPodsPending, false},
		"podsRunning":            {[]string{"!selector", "min"}, nil, evalPodsRunning, false},
		"serviceExternalIP":      {[]string{"!name", "!state"}, map[string][]string{"state": {"pending", "set"}}, evalServiceExternalIP, false},
		"serviceClass":           {[]string{"!name", "!class"}, nil, evalServiceClass, false},
		"serviceEvents":          {[]string{"!name", "!reasons", "message"}, nil, evalServiceEvents, false},
		"noControllerEvents":     {[]string{"!name"}, nil, evalNoControllerEvents, false},
		"serviceFlow":            {[]string{"!name", "step", "reason"}, nil, evalServiceFlow, false},
		"controllerEnabled":      {[]string{"!controller", "!enabled"}, map[string][]string{"controller": format.Switches()}, evalControllerEnabled, false},
		"cloudDeny":              {[]string{"!action", "!denied"}, map[string][]string{"action": cloud.Actions()}, evalCloudDeny, false},
		"lbTargets":              {[]string{"!name", "!mode"}, map[string][]string{"mode": {"instance", "ip"}}, evalLBTargets, false},
		"healthChecksFollowPods": {[]string{"!name"}, nil, evalHealthChecksFollowPods, false},
		"unevenLoad":             {[]string{"!name"}, nil, evalUnevenLoad, false},
		"routeForEveryNode":      {[]string{"nodes"}, nodesEnum, evalRouteForEveryNode, false},
		"nodeWithoutRoute":       {[]string{"nodes"}, nodesEnum, evalNodeWithoutRoute, false},
		"noStaleRoutes":          {nil, nil, evalNoStaleRoutes, false},
		"instanceTerminated":     {[]string{"nodes"}, nodesEnum, evalInstanceTerminated, false},
		"nodeNotReady":           {nil, nil, evalNodeNotReady, false},
		"nodeDeleted":            {[]string{"nodes"}, nodesEnum, evalNodeDeleted, false},
	}
	for name, k := range evidenceKinds() {
		k.evidence = true
		m[name] = k
	}
	for name, k := range extraKinds() {
		m[name] = k
	}
	return m
}

// Kinds lists the check kinds, sorted.
func Kinds() []string {
	var names []string
	for k := range checkKinds() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// setParams returns the JSON names of the parameters a spec sets, with
// their values as strings (lists joined by commas).
func setParams(c format.CheckSpec) map[string]string {
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

// Validate checks one spec against its kind: the kind exists, required
// parameters are set, no parameter is set that the kind ignores, and
// values are in range. format only checks the structure of a file; the
// service runs this on every spec it loads (see ValidateAll).
func Validate(c format.CheckSpec) error {
	k, ok := checkKinds()[c.Kind]
	if !ok {
		return fmt.Errorf("unknown check kind %q (valid: %s)", c.Kind, strings.Join(Kinds(), ", "))
	}
	allowed := map[string]bool{}
	var errs []error
	set := setParams(c)
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

// Evaluate runs one check against the lab with the whole history as
// evidence. since is when the exercise started: instances launched or
// terminated after it count as "new". A check that cannot read the lab
// fails.
func Evaluate(ctx context.Context, env Env, since time.Time, c format.CheckSpec) Outcome {
	return EvaluateStep(ctx, env, Input{Start: since}, c)
}

// EvaluateStep runs one check of a step: evidence kinds look only at what
// was recorded after in.Since.
func EvaluateStep(ctx context.Context, env Env, in Input, c format.CheckSpec) Outcome {
	return newEvalCtx(env, in).evaluate(ctx, c)
}

func newEvalCtx(env Env, in Input) *evalCtx {
	e := &evalCtx{env: env, start: in.Start, in: in}
	if env.History != nil {
		e.hist, e.histErr = env.History.Since(in.Since)
	}
	return e
}

// sinceStart is the history after the exercise's reset.
func (e *evalCtx) sinceStart() ([]history.Entry, error) {
	if !e.readStart {
		e.readStart = true
		if e.env.History != nil {
			e.fromStart, e.fromStartErr = e.env.History.Since(e.in.StartSeq)
		}
	}
	return e.fromStart, e.fromStartErr
}

// IsEvidence says whether a kind reads the history after Input.Since.
func IsEvidence(kind string) bool { return checkKinds()[kind].evidence }

// ValidateAll validates every check spec and answer of every exercise and
// says where the bad ones are. Every step must need fresh evidence: an
// evidence kind among its checks, or an answer.
func ValidateAll(exs []*format.Exercise) error {
	var errs []error
	for _, ex := range exs {
		for _, st := range ex.Steps {
			fresh := st.Answer != nil
			for j, c := range st.Checks {
				if err := Validate(c); err != nil {
					errs = append(errs, fmt.Errorf("exercise %s, step %s, checks[%d]: %w", ex.ID, st.ID, j, err))
				}
				fresh = fresh || IsEvidence(c.Kind)
			}
			if st.Answer != nil {
				if err := ValidateAnswer(*st.Answer); err != nil {
					errs = append(errs, fmt.Errorf("exercise %s, step %s, answer: %w", ex.ID, st.ID, err))
				}
			}
			if !fresh {
				errs = append(errs, fmt.Errorf("exercise %s, step %s: no check reads the history (an evidence kind: %s) and no answer is asked, so the step could pass without the student doing it",
					ex.ID, st.ID, strings.Join(EvidenceKinds(), ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

// EvidenceKinds lists the kinds that read the history, sorted.
func EvidenceKinds() []string {
	var out []string
	for name, k := range checkKinds() {
		if k.evidence {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (e *evalCtx) evaluate(ctx context.Context, c format.CheckSpec) Outcome {
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
	switch scope {
	case "new":
		var out []corev1.Node
		for _, n := range nodes {
			if inst, ok := e.env.Cloud.LookupInstance(n.Name); ok && e.isNew(inst) {
				out = append(out, n)
			}
		}
		nodes = out
	case "workers":
		// Every Node but the control plane's, which the lab initialized at
		// start and no exercise replaces.
		var out []corev1.Node
		for _, n := range nodes {
			if _, cp := n.Labels[kubelet.LabelControlPlane]; !cp {
				out = append(out, n)
			}
		}
		nodes = out
	}
	if len(nodes) == 0 {
		if scope == "new" {
			return nil, failf("演習を始めてから起動した VM の Node がまだありません。",
				"no Node yet for a VM launched since the exercise started."), false
		}
		if scope == "workers" {
			return nil, failf("ワーカーの Node が 1 つもありません。", "there are no worker Nodes."), false
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
			return Outcome{false, i18n.Text{JA: fmt.Sprintf("Node %s: %s", nodes[i].Name, ja), EN: fmt.Sprintf("Node %s: %s", nodes[i].Name, en)}}
		}
		names = append(names, nodes[i].Name)
	}
	return passf(okJA+" (%s)", okEN+" (%s)", strings.Join(names, ", "))
}

func (e *evalCtx) instanceOf(n *corev1.Node) (cloud.Instance, bool) {
	return e.env.Cloud.LookupInstance(n.Name)
}

func (e *evalCtx) service(ctx context.Context, name string) (*corev1.Service, Outcome, bool) {
	svc, err := e.env.Client.CoreV1().Services(format.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, failf("Service %s はまだありません。", "Service %s does not exist yet.", name), false
	}
	if err != nil {
		return nil, errOutcome(err), false
	}
	return svc, Outcome{}, true
}

// lbName is the name of the load balancer the Service's owner gives it:
// the CCM's, derived from the UID. The AWS Load Balancer Controller's
// name carries a hash of its own (model_build_load_balancer.go:577-594),
// so its NLB is found by its tag instead (lbcLoadBalancer).
func lbName(svc *corev1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// lbcLoadBalancer is the lbc add-on's NLB for svc: the one tagged
// service.k8s.aws/stack=<namespace>/<name>, created after the Service
// (an earlier Service's of that name may still be being deleted).
func (e *evalCtx) lbcLoadBalancer(svc *corev1.Service) (cloud.LoadBalancer, bool) {
	stack := svc.Namespace + "/" + svc.Name
	for _, lb := range e.env.Cloud.LoadBalancerViews() {
		if lb.Tags[cloud.StackTag] == stack && !lb.CreatedAt.Before(svc.CreationTimestamp.Time) {
			return *lb, true
		}
	}
	return cloud.LoadBalancer{}, false
}

func (e *evalCtx) loadBalancer(svc *corev1.Service) (cloud.LoadBalancer, Outcome, bool) {
	if ccmnames.LBCOwns(svc) {
		lb, ok := e.lbcLoadBalancer(svc)
		if !ok {
			return lb, failf("クラウドに Service %s 用の NLB (タグ service.k8s.aws/stack=%s) がありません。", "the cloud has no NLB for Service %s (tag service.k8s.aws/stack=%s).", svc.Name, svc.Namespace+"/"+svc.Name), false
		}
		return lb, Outcome{}, true
	}
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

func summarize(tr dataplane.Trace) i18n.Text {
	s := fmt.Sprintf("%d", tr.Status)
	if tr.Pod != "" {
		s += fmt.Sprintf(" pod=%s@%s", tr.Pod, tr.PodNode)
	}
	out := i18n.Text{JA: s, EN: s}
	if tr.Error != "" {
		// The data plane names its failure by a key; the Japanese verdict
		// quotes the Japanese text, not the English one.
		ja := tr.Error
		if tr.ErrorKey != "" {
			ja = tracetext.Catalog().Text(i18n.Msg{Key: tr.ErrorKey, Args: tr.ErrorArgs}).JA
		}
		out.JA += " (" + ja + ")"
		out.EN += " (" + tr.Error + ")"
	}
	return out
}

// failText is failf for a verdict that quotes a text already in both
// languages: its JA goes into ja and its EN into en.
func failText(ja, en string, quoted i18n.Text, args ...any) Outcome {
	return Outcome{false, i18n.Text{
		JA: fmt.Sprintf(ja, append(args, quoted.JA)...),
		EN: fmt.Sprintf(en, append(args, quoted.EN)...),
	}}
}

// IngressOf is what EXTERNAL-IP shows for svc ("" while <pending>).
func IngressOf(svc *corev1.Service) string { return ingressOf(svc) }
