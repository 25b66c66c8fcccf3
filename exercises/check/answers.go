package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/history"
)

// Answers: a step may ask the student to type a value read from the lab.
// An answer kind says which lab value it is compared with; the values are
// read when the answer is submitted.

// answerKind is one kind of typed answer.
type answerKind struct {
	// name: the kind is about a Service, named by AnswerSpec.Name.
	name bool
	// values returns the accepted values (compared without case and
	// surrounding space), or a failure saying why there is nothing to
	// compare with yet.
	values func(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome)
}

func answerKinds() map[string]answerKind {
	m := map[string]answerKind{
		"newNodeInstanceID": {values: newNodeValue(func(i cloud.Instance) string { return i.ID })},
		"newNodeZone":       {values: newNodeValue(func(i cloud.Instance) string { return i.Zone })},
		"newNodePrivateIP":  {values: newNodeValue(func(i cloud.Instance) string { return i.PrivateIP })},
		"taintRemover":      {values: answerTaintRemover},
		"clientIPSeenByPod": {name: true, values: answerClientIP},
		"externalAddress":   {name: true, values: answerExternalAddress},
		"healthyTargets":    {name: true, values: answerHealthyTargets},
	}
	for k, v := range extraAnswerKinds() {
		m[k] = v
	}
	return m
}

// AnswerKinds lists the answer kinds, sorted.
func AnswerKinds() []string {
	var out []string
	for k := range answerKinds() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ValidateAnswer checks an answer spec against its kind.
func ValidateAnswer(a format.AnswerSpec) error {
	k, ok := answerKinds()[a.Kind]
	if !ok {
		return fmt.Errorf("unknown answer kind %q (valid: %s)", a.Kind, strings.Join(AnswerKinds(), ", "))
	}
	if k.name && a.Name == "" {
		return fmt.Errorf("%s: name is required", a.Kind)
	}
	if !k.name && a.Name != "" {
		return fmt.Errorf("%s: name does not apply", a.Kind)
	}
	return nil
}

// MaxAnswerLen bounds a typed answer.
const MaxAnswerLen = 256

// ErrBadAnswer: the typed value is empty or too long.
var ErrBadAnswer = errors.New("bad answer")

// NormalizeAnswer trims a typed value and rejects an empty or overlong one.
func NormalizeAnswer(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("%w: the answer is empty", ErrBadAnswer)
	}
	if len(v) > MaxAnswerLen {
		return "", fmt.Errorf("%w: the answer is longer than %d bytes", ErrBadAnswer, MaxAnswerLen)
	}
	return v, nil
}

// CheckAnswer compares a typed value (normalized) with the lab's. The
// Outcome says, without giving the value away, what was compared.
func CheckAnswer(ctx context.Context, env Env, in Input, a format.AnswerSpec, value string) Outcome {
	k, ok := answerKinds()[a.Kind]
	if !ok {
		return failf("未知の解答の種類 %q", "unknown answer kind %q", a.Kind)
	}
	e := newEvalCtx(env, in)
	want, o := k.values(ctx, e, a)
	if len(want) == 0 {
		return o
	}
	if slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(strings.TrimSpace(w), value) }) {
		return passf("正解です: %s はラボの値と一致します", "right: %s matches the lab", value)
	}
	return failf("%s はラボの値と一致しません。もう一度読んでみてください。", "%s does not match the lab: read it again.", value)
}

// newNodeValue reads one value of every instance launched since the
// exercise started that runs and has a Node.
func newNodeValue(get func(cloud.Instance) string) func(context.Context, *evalCtx, format.AnswerSpec) ([]string, Outcome) {
	return func(ctx context.Context, e *evalCtx, _ format.AnswerSpec) ([]string, Outcome) {
		nodes, o, ok := e.selectNodes(ctx, "new")
		if !ok {
			return nil, o
		}
		var out []string
		for _, n := range nodes {
			if inst, ok := e.instanceOf(&n); ok && inst.State == cloud.InstanceRunning {
				out = append(out, get(inst))
			}
		}
		if len(out) == 0 {
			return nil, failf("新しい VM の Node がありません。", "no Node of a new VM.")
		}
		return out, Outcome{}
	}
}

// answerTaintRemover: the field managers that removed the uninitialized
// taint from a Node of a VM launched since the exercise started.
func answerTaintRemover(_ context.Context, e *evalCtx, _ format.AnswerSpec) ([]string, Outcome) {
	hist, err := e.sinceStart()
	var out []string
	for _, en := range hist {
		if en.Kind == history.KindObject && en.Object.Resource == "nodes" && changeMatches(ChangeTaintRemoved, en.Object) && e.newNode(en.Object.Name) {
			out = append(out, en.Object.Managers...)
		}
	}
	if len(out) == 0 {
		if err != nil {
			return nil, e.truncated()
		}
		return nil, failf("演習を始めてから、新しい Node の taint はまだ外れていません。", "no new Node has lost its taint since the exercise started.")
	}
	// Only the manager managedFields records passes: the question asks
	// for that name, and "node-controller" (the step's own words, and the
	// ServiceAccount of the KCM's node lifecycle controller) would pass a
	// guess.
	return out, Outcome{}
}

// answerClientIP: the source IPs Pods saw in the student's requests to
// the Service since the previous step.
func answerClientIP(_ context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	key := format.Namespace + "/" + a.Name
	var out []string
	for _, en := range e.hist {
		if en.Kind == history.KindTrace && en.Trace.Origin != dataplane.OriginLab && en.Trace.Service == key && en.Trace.Status == 200 && en.Trace.SourceIPSeenByPod != "" {
			out = append(out, en.Trace.SourceIPSeenByPod)
		}
	}
	if len(out) == 0 {
		return nil, failf("前のステップの後、Service %s に 200 で答えたリクエストがありません。先にリクエストを送ってください。", "no request to Service %s got 200 since the previous step: send one first.", a.Name)
	}
	return out, Outcome{}
}

// answerExternalAddress: what EXTERNAL-IP shows (a DNS name or an IP,
// whichever the profile gives).
func answerExternalAddress(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	svc, o, ok := e.service(ctx, a.Name)
	if !ok {
		return nil, o
	}
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if v := cmp.Or(in.Hostname, in.IP); v != "" {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, failf("Service %s の EXTERNAL-IP はまだ <pending> です。", "Service %s's EXTERNAL-IP is still <pending>.", a.Name)
	}
	return out, Outcome{}
}

// answerHealthyTargets: how many of the Service's load balancer targets
// are healthy now.
func answerHealthyTargets(ctx context.Context, e *evalCtx, a format.AnswerSpec) ([]string, Outcome) {
	svc, o, ok := e.service(ctx, a.Name)
	if !ok {
		return nil, o
	}
	lb, o, ok := e.loadBalancer(svc)
	if !ok {
		return nil, o
	}
	n := 0
	for _, t := range lb.Targets {
		if t.Health == cloud.TargetHealthy {
			n++
		}
	}
	return []string{fmt.Sprint(n)}, Outcome{}
}
