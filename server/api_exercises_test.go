package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
)

type noDataplane struct{}

func (noDataplane) Do(context.Context, dataplane.Request) (dataplane.Trace, error) {
	return dataplane.Trace{}, &dataplane.RequestError{Reason: dataplane.ReasonInvalid, Message: "no data plane"}
}
func (noDataplane) Traces() []dataplane.Trace { return nil }

type noFlows struct{}

func (noFlows) ServiceFlow(string) (flow.ServiceFlow, bool) { return flow.ServiceFlow{}, false }
func (noFlows) NodeFlow(string) (flow.NodeFlow, bool)       { return flow.NodeFlow{}, false }

// The exercise endpoints' contract, over an exercises service on a fake
// lab: answers and reset bodies are validated with clear statuses, and
// nothing passes on its own.
func TestExerciseAPI(t *testing.T) {
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.New(history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := progress.Open(filepath.Join(t.TempDir(), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	p, _ := profile.Get("aws")
	ctrl := &fakeControllers{on: map[string]bool{"node": true, "nodelifecycle": true, "route": true, "service": true}}
	ex, err := exercises.New(exercises.Config{
		Env:   check.Env{Client: fake.NewClientset(), Cloud: c, Flow: noFlows{}, Controllers: ctrl, Dataplane: noDataplane{}, Profile: p, History: h},
		Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetLab(&Lab{Profile: p, Cloud: c, Controllers: ctrl, Exercises: ex, Epoch: "test"})
	srv.SetReady(true)
	l := &testLab{srv: srv}

	const ans = "/api/exercises/node-init/steps/provider-id/answer"
	for _, tt := range []struct {
		name     string
		req      req
		wantCode int
		wantBody string
	}{
		{"answer missing", req{method: "POST", path: ans, body: `{}`}, 400, `{\"answer\"`},
		{"answer empty", req{method: "POST", path: ans, body: `{"answer":"  "}`}, 400, "empty"},
		{"answer not a string", req{method: "POST", path: ans, body: `{"answer":5}`}, 400, `field \"answer\" must be string`},
		{"answer too long", req{method: "POST", path: ans, body: `{"answer":"` + strings.Repeat("x", 300) + `"}`}, 400, "longer than"},
		{"answer unknown field", req{method: "POST", path: ans, body: `{"answer":"i-1","x":1}`}, 400, `unknown field`},
		{"answer unknown step", req{method: "POST", path: "/api/exercises/node-init/steps/nope/answer", body: `{"answer":"x"}`}, 404, "no step"},
		{"answer unknown exercise", req{method: "POST", path: "/api/exercises/nope/steps/x/answer", body: `{"answer":"x"}`}, 404, "no exercise"},
		{"answer a step that asks none", req{method: "POST", path: "/api/exercises/node-init/steps/launch/answer", body: `{"answer":"x"}`}, 400, "asks for no answer"},
		{"answer a locked step", req{method: "POST", path: ans, body: `{"answer":"i-1"}`}, 409, "has not passed"},
		{"hint of a locked step", req{method: "POST", path: "/api/exercises/node-init/steps/provider-id/hint"}, 409, "has not passed"},
		{"quiz before the steps", req{method: "POST", path: "/api/exercises/node-init/quiz/who-writes-providerid", body: `{"choice":0}`}, 409, "opens once its steps have passed"},
		{"answer a locked step, in Japanese", req{method: "POST", path: ans + "?lang=ja", body: `{"answer":"i-1"}`}, 409, "まだ通っていません"},
		{"hint of a locked step, in Japanese", req{method: "POST", path: "/api/exercises/node-init/steps/provider-id/hint?lang=ja"}, 409, "まだ通っていません"},
		{"quiz before the steps, in Japanese", req{method: "POST", path: "/api/exercises/node-init/quiz/who-writes-providerid?lang=ja", body: `{"choice":0}`}, 409, "ステップをすべて通ると開きます"},
		{"unknown exercise, in Japanese", req{method: "POST", path: "/api/exercises/nope/steps/x/answer?lang=ja", body: `{"answer":"x"}`}, 404, "見つかりません"},
		{"a student plants a cause", req{method: "POST", path: "/api/exercises/mystery-pending/reset", body: `{"cause":"no-service-controller"}`, header: map[string]string{"X-Ccmlab-Role": "student"}}, 403, "instructor's to choose"},
		{"the owner's mystery offers the plant", req{method: "GET", path: "/api/exercises/mystery-pending"}, 200, `"plant":true`},
		{"hint of no step", req{method: "POST", path: "/api/exercises/node-init/steps/nope/hint"}, 404, "no step"},
		{"reset with a cause", req{method: "POST", path: "/api/exercises/node-init/reset", body: `{"cause":"iam-deny"}`}, 400, "takes no cause"},
		{"reset unknown field", req{method: "POST", path: "/api/exercises/node-init/reset", body: `{"why":1}`}, 400, "unknown field"},
		{"list", req{method: "GET", path: "/api/exercises?lang=ja"}, 200, `"stepsPassed":0`},
		{"detail", req{method: "GET", path: "/api/exercises/node-init"}, 200, `"minutes":`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := l.do(tt.req)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("%s %s = %d %s, want %d containing %s", tt.req.method, tt.req.path, code, body, tt.wantCode, tt.wantBody)
			}
			if code >= 400 {
				var e map[string]string
				if err := json.Unmarshal([]byte(body), &e); err != nil || e["error"] == "" {
					t.Fatalf("error body %q is not {\"error\": \"...\"}", body)
				}
			}
		})
	}
	// A student behind the portal is not offered the instructor's choice
	// of the next reset's cause.
	if code, body := l.do(req{method: "GET", path: "/api/exercises/mystery-pending", header: map[string]string{"X-Ccmlab-Role": "student"}}); code != 200 || strings.Contains(body, `"plant"`) || !strings.Contains(body, `"causes"`) {
		t.Errorf("a student's mystery: %d %s", code, body)
	}
	// Nothing of the refused calls was recorded.
	d, err := ex.Get(context.Background(), "node-init", "en")
	if err != nil {
		t.Fatal(err)
	}
	typed, err := store.StepAnswers(context.Background(), "node-init")
	if err != nil {
		t.Fatal(err)
	}
	answers, err := store.Answers(context.Background(), "node-init")
	if err != nil {
		t.Fatal(err)
	}
	if d.StepsPassed != 0 || len(typed) != 0 || len(answers) != 0 {
		t.Errorf("after refused calls: %+v, typed %v, quiz %v", d.Steps[1], typed, answers)
	}
	// A locked step and the quiz before the steps send nothing to read.
	if s := d.Steps[1]; !s.Locked || s.Body != "" || s.Answer != nil || len(s.Commands) != 0 {
		t.Errorf("locked step sent: %+v", s)
	}
	if q := d.Quiz[0]; !q.Locked || q.Question != "" || len(q.Choices) != 0 {
		t.Errorf("quiz before the steps sent: %+v", q)
	}
}
