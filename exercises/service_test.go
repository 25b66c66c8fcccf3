package exercises

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The tests in this file need no control plane: the Service runs over a
// fake clientset and a real in-memory cloud.

type fakeControllers map[string]bool

func (f fakeControllers) Status() map[string]bool { return maps.Clone(f) }
func (f fakeControllers) Enable(n string) error   { f[n] = true; return nil }
func (f fakeControllers) Disable(n string) error  { f[n] = false; return nil }

type noDataplane struct{}

func (noDataplane) Do(context.Context, dataplane.Request) (dataplane.Trace, error) {
	return dataplane.Trace{}, &dataplane.RequestError{Reason: dataplane.ReasonInvalid, Message: "no data plane"}
}
func (noDataplane) Traces() []dataplane.Trace { return nil }

type noFlows struct{}

func (noFlows) ServiceFlow(string) (flow.ServiceFlow, bool) { return flow.ServiceFlow{}, false }
func (noFlows) NodeFlow(string) (flow.NodeFlow, bool)       { return flow.NodeFlow{}, false }

// fakeEnv is a lab of the given profile with nothing running.
func fakeEnv(t *testing.T, profileName string, ctrl fakeControllers) check.Env {
	t.Helper()
	p, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.New(history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return check.Env{Client: fake.NewClientset(), Cloud: c, Flow: noFlows{}, Controllers: ctrl, Dataplane: noDataplane{}, Profile: p, History: h}
}

func openStore(t *testing.T) *progress.Store {
	t.Helper()
	store, err := progress.Open(filepath.Join(t.TempDir(), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// New loads every embedded exercise and validates every check spec with
// the checker; a lab without its required fields is refused.
func TestNewValidates(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.exercises) == 0 {
		t.Fatal("no exercises loaded")
	}
	if _, err := New(Config{Store: openStore(t)}); err == nil {
		t.Error("New without an Env succeeded")
	}
}

// An exercise that needs what the lab lacks is unavailable, not broken.
func TestUnavailableExercise(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "kubevirt", fakeControllers{"node": true, "nodelifecycle": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"pending-on-purpose", "lb-class", "routes"} {
		if err := s.Reset(ctx, id); !errors.Is(err, ErrUnavailable) {
			t.Errorf("reset %s in kubevirt: %v", id, err)
		}
		if _, err := s.Check(ctx, id, "en"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("check %s in kubevirt: %v", id, err)
		}
	}
	list, err := s.List(ctx, "en")
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range list {
		want := !slices.Contains([]string{"pending-on-purpose", "iam-deny", "lb-class", "local-traffic", "routes",
			"delete-finalizer", "ingress-ip-hostname", "lbc-annotations", "rate-limits", "cloudprovider-interface", "mystery-pending",
			"security-groups", "closed-node-group", "ip-targets-routes", "subnet-tags", "ccm-rbac", "ccm-toleration", "lb-owner"}, sum.ID)
		if sum.Available != want {
			t.Errorf("%s available = %v (%s)", sum.ID, sum.Available, sum.Unavailable)
		}
	}
}

// The quiz keeps the first answer's result; every reasoning shows after
// any answer; the quiz is done once every question was answered.
func TestQuizKeepsFirstAnswer(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	const id = "review"
	ctx := context.Background()
	if err := s.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	ex := s.byID[id]
	seed, err := s.seed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range ex.Quiz {
		// Positions are in the order this lab shows the choices.
		order := choiceOrder(seed, id, q.ID, len(q.Choices))
		right := slices.IndexFunc(order, func(j int) bool { return q.Choices[j].Correct })
		first := right
		if i%2 == 0 {
			first = (right + 1) % len(q.Choices) // wrong first on every other question
		}
		res, err := s.Answer(ctx, id, q.ID, first, "ja")
		if err != nil {
			t.Fatal(err)
		}
		if res.Correct != (first == right) || res.Why != q.Choices[order[first]].Why.JA || res.View.Choices[first].Text != q.Choices[order[first]].Text.JA {
			t.Errorf("%s first answer: %+v", q.ID, res)
		}
		for j, c := range res.View.Choices {
			if c.Why == "" || c.Correct == nil || *c.Correct != (j == right) {
				t.Errorf("%s: after an answer choice %d shows %+v", q.ID, j, c)
			}
		}
		// A second try does not change the result.
		res, err = s.Answer(ctx, id, q.ID, right, "en")
		if err != nil {
			t.Fatal(err)
		}
		if res.View.Correct != (first == right) || *res.View.Choice != first || res.View.Attempts != 2 {
			t.Errorf("%s after a second try: %+v", q.ID, res.View)
		}
	}
	list, err := s.List(ctx, "ja")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(x Summary) bool { return x.ID == id })
	if want := len(ex.Quiz) / 2; !list[i].Done || list[i].QuestionsCorrect != want || list[i].Title != ex.Title.JA {
		t.Errorf("summary: %+v, want done with %d correct", list[i], want)
	}
	if want := (len(ex.Quiz) + 1) / 2; list[i].WrongAnswers != want {
		t.Errorf("wrong answers %d, want %d", list[i].WrongAnswers, want)
	}
	if err := s.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Get(ctx, id, "en"); d.Quiz[0].Answered || d.Done {
		t.Errorf("answers survive a reset: %+v", d.Quiz[0])
	}
	if _, err := s.Answer(ctx, id, "nope", 0, "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown question: %v", err)
	}
	if _, err := s.Answer(ctx, id, ex.Quiz[0].ID, 99, "en"); !errors.Is(err, ErrBadInput) {
		t.Errorf("choice out of range: %v", err)
	}
}

// Every lab shows a question's choices in its own order, the same on
// every call: the right choice is not where the file lists it.
func TestChoiceOrder(t *testing.T) {
	moved := 0
	total := 0
	for _, ex := range mustLoad(t) {
		for _, q := range ex.Quiz {
			a := choiceOrder(1, ex.ID, q.ID, len(q.Choices))
			if b := choiceOrder(1, ex.ID, q.ID, len(q.Choices)); !slices.Equal(a, b) {
				t.Fatalf("%s/%s: two orders for one seed: %v %v", ex.ID, q.ID, a, b)
			}
			sorted := slices.Clone(a)
			slices.Sort(sorted)
			for i, v := range sorted {
				if i != v {
					t.Fatalf("%s/%s: %v is not a permutation", ex.ID, q.ID, a)
				}
			}
			for seed := range uint64(20) {
				total++
				o := choiceOrder(seed, ex.ID, q.ID, len(q.Choices))
				if !q.Choices[o[0]].Correct {
					moved++
				}
			}
		}
	}
	// With 3 or 4 choices the right one comes first about a third or a
	// quarter of the time; the file's order would put it first far more.
	if share := float64(total-moved) / float64(total); share > 0.45 {
		t.Errorf("the right choice comes first in %.0f%% of the orders", 100*share)
	}
}

// Hints open one at a time, the solution only after all of them; a step
// not yet reached opens nothing.
func TestHintsThenSolution(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const id = "node-init"
	ex := s.byID[id]
	st := ex.Steps[0]
	d, err := s.Get(ctx, id, "en")
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Steps[0]; len(v.Hints) != 0 || len(v.Solution) != 0 || !v.SolutionHidden || v.HintCount != len(st.Hints) {
		t.Fatalf("before any hint: %+v", v)
	}
	for n := 1; n <= len(st.Hints)+1; n++ {
		d, err = s.RevealHint(ctx, id, st.ID, "en")
		if err != nil {
			t.Fatal(err)
		}
		v := d.Steps[0]
		if len(v.Hints) != min(n, len(st.Hints)) {
			t.Fatalf("after %d requests: %d hints", n, len(v.Hints))
		}
		if solved := n > len(st.Hints); solved != (len(v.Solution) == len(st.Solution)) || solved == v.SolutionHidden {
			t.Fatalf("after %d requests (of %d hints): solution %+v hidden %v", n, len(st.Hints), v.Solution, v.SolutionHidden)
		}
	}
	if d.HintsOpened != len(st.Hints)+1 {
		t.Errorf("hints opened %d, want %d", d.HintsOpened, len(st.Hints)+1)
	}
	if len(ex.Steps) > 1 {
		if _, err := s.RevealHint(ctx, id, ex.Steps[1].ID, "en"); !errors.Is(err, ErrNotCurrent) {
			t.Errorf("a hint of a locked step: %v", err)
		}
	}
	if _, err := s.RevealHint(ctx, id, "nope", "en"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a hint of no step: %v", err)
	}
}

// One step at a time, each on evidence recorded after the previous step
// passed; the automatic check does the same and says so.
func TestCheckOneStepAtATime(t *testing.T) {
	ctrl := fakeControllers{"node": true, "service": true}
	env := fakeEnv(t, "aws", ctrl)
	var told []string
	s, err := New(Config{Env: env, Store: openStore(t), OnProgress: func(id string) { told = append(told, id) }})
	if err != nil {
		t.Fatal(err)
	}
	on, off := true, false
	ex := &format.Exercise{ID: "toggle", Order: 99, Minutes: 1, Steps: []format.Step{
		{ID: "off", Checks: []format.CheckSpec{{Kind: "switched", Controller: "service", Enabled: &off}}},
		{ID: "on", Checks: []format.CheckSpec{{Kind: "switched", Controller: "service", Enabled: &on}}},
	}}
	s.exercises = append(s.exercises, ex)
	s.byID[ex.ID] = ex
	ctx := context.Background()
	// What Reset does last (the fake lab has no nodes to settle).
	if err := s.cfg.Store.Restart(ctx, ex.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.markStart(ex.ID)
	s.mu.Unlock()
	flip := func(v bool) {
		ctrl["service"] = v
		env.History.Record(history.Entry{Kind: history.KindSwitch, Switch: &history.Switch{Controller: "service", On: v}})
	}
	// Both actions before any check: the first step passes, the second
	// does not on the same evidence.
	flip(false)
	flip(true)
	ctrl["service"] = false // the state the first step wants
	rep, err := s.Check(ctx, ex.ID, "en")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps[0].Status != StepPassed || rep.Steps[1].Status != StepLocked || rep.CurrentStep != "on" {
		t.Fatalf("first check: %+v", rep)
	}
	ctrl["service"] = true
	if rep, _ := s.Check(ctx, ex.ID, "en"); rep.Steps[1].Status != StepFailed {
		t.Fatalf("the second step passed on the first step's evidence: %+v", rep.Steps[1])
	}
	flip(false)
	flip(true)
	s.AutoCheck(ctx)
	steps, _ := s.cfg.Store.Steps(ctx, ex.ID)
	if !steps["on"].Passed() || len(told) != 1 || told[0] != ex.ID {
		t.Fatalf("automatic check: steps %+v, told %v", steps, told)
	}
	// A failed automatic check is not counted as the student's attempt.
	if steps["on"].Attempts != 2 {
		t.Errorf("attempts %d, want 2 (one failed click, one pass)", steps["on"].Attempts)
	}
}

func mustLoad(t *testing.T) []*format.Exercise {
	t.Helper()
	all, err := format.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestCommandsNameTheLabsAddress(t *testing.T) {
	for _, tc := range []struct{ addr, in, want string }{
		{"localhost:8080", "curl -s localhost:8080/api/cloud/calls", "curl -s localhost:8080/api/cloud/calls"},
		{"localhost:9090", "curl -s localhost:8080/api/cloud/calls | jq .", "curl -s localhost:9090/api/cloud/calls | jq ."},
		{"10.1.2.3:8080", "curl -XPUT localhost:8080/api/cloud/faults -d '{}'", "curl -XPUT 10.1.2.3:8080/api/cloud/faults -d '{}'"},
		{"localhost:9090", "kubectl get svc", "kubectl get svc"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			s := &Service{cfg: Config{Addr: tc.addr}}
			if got := s.onThisLab(tc.in); got != tc.want {
				t.Errorf("onThisLab(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// A command written for the default data dir (.ccmlab, relative to where
// ccmlab started) names the lab's own, absolute, wherever it is: the
// student's terminal may be in any directory and the lab may run with
// --data-dir.
func TestCommandsNameTheLabsDataDir(t *testing.T) {
	for _, tc := range []struct{ dir, in, want string }{
		{"/srv/lab", ". .ccmlab/aws.env; aws ec2 describe-subnets", ". /srv/lab/aws.env; aws ec2 describe-subnets"},
		{"/srv/lab", "export KUBECONFIG=.ccmlab/kubeconfig", "export KUBECONFIG=/srv/lab/kubeconfig"},
		{"/home/u/.ccmlab", "cat '.ccmlab/aws.env'", "cat '/home/u/.ccmlab/aws.env'"},
		{"/srv/lab", "kubectl get svc my.ccmlab/x", "kubectl get svc my.ccmlab/x"}, // not a path of its own
		{"", ". .ccmlab/aws.env; aws ec2 describe-subnets", ". .ccmlab/aws.env; aws ec2 describe-subnets"},
		{"/home/u/my lab", ". .ccmlab/aws.env; aws ec2 describe-subnets", ". '/home/u/my lab/'aws.env; aws ec2 describe-subnets"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := CommandOnLab(tc.in, defaultAddr, tc.dir); got != tc.want {
				t.Errorf("CommandOnLab(%q, %q) = %q, want %q", tc.in, tc.dir, got, tc.want)
			}
		})
	}
	s := &Service{cfg: Config{DataDir: "/srv/lab"}}
	if got, want := s.shellLine(), ". /srv/lab/lab.env"; got != want {
		t.Errorf("shell line %q, want %q", got, want)
	}
}

// The ending names what the exercise asks the student to find: Get sends
// it, in the request's language, only once the exercise is done, and not
// again after a reset.
func TestEndingOnlyWhenDone(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	const id = "review"
	ctx := context.Background()
	if err := s.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	ex := s.byID[id]
	ending := func(lang string) string {
		t.Helper()
		d, err := s.Get(ctx, id, lang)
		if err != nil {
			t.Fatal(err)
		}
		return d.Ending
	}
	for i, q := range ex.Quiz {
		if got := ending("en"); got != "" {
			t.Fatalf("ending sent with %d of %d questions answered: %q", i, len(ex.Quiz), got)
		}
		if _, err := s.Answer(ctx, id, q.ID, 0, "en"); err != nil {
			t.Fatal(err)
		}
	}
	if got := ending("ja"); got != ex.Ending.JA {
		t.Errorf("done, ja ending = %q, want %q", got, ex.Ending.JA)
	}
	if got := ending("en"); got != ex.Ending.EN {
		t.Errorf("done, en ending = %q, want %q", got, ex.Ending.EN)
	}
	if err := s.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := ending("en"); got != "" {
		t.Errorf("ending survives a reset: %q", got)
	}
}
