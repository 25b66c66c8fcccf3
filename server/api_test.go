//go:build !unit

package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server/hub"
)

var env *cptest.Env

// The control plane's etcd has a small quota, so that TestFullEtcd can
// fill it with a few ConfigMaps.
func TestMain(m *testing.M) {
	cptest.Main(m, &env, func(c *controlplane.Config) { c.EtcdQuotaBytes = testEtcdQuota })
}

func newTestLab(t *testing.T, token string) *testLab {
	t.Helper()
	cptest.Need(t)
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.RunInstance(context.Background(), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &fakeControllers{on: map[string]bool{"node": true, "nodelifecycle": true}}
	obs, err := flow.New(flow.Config{Client: env.Client, Cloud: c, Controllers: ctrl.Status})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = obs.Run(ctx) }()
	if err := obs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := hub.New(hub.Config{RecordEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := profile.Get("kubevirt")
	srv.SetLab(&Lab{Profile: p, Cloud: c, Controllers: ctrl, Flow: obs, Hub: h, Epoch: "test"})
	srv.SetReady(true)
	return &testLab{srv: srv, cloud: c, ctrl: ctrl, inst: inst}
}

func TestAPI(t *testing.T) {
	l := newTestLab(t, "")
	id := l.inst.ID
	tests := []struct {
		name     string
		req      req
		wantCode int
		wantBody string // substring
	}{
		{"healthz", req{method: "GET", path: "/healthz"}, 200, "ok"},
		{"state", req{method: "GET", path: "/api/state"}, 200, `"epoch":"test"`},
		{"controllers", req{method: "GET", path: "/api/controllers"}, 200, `"node":true`},
		{"disable node", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`}, 200, `"node":false`},
		{"enable node", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":true}`}, 200, `"node":true`},
		{"controller malformed JSON", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":`}, 400, "malformed JSON"},
		{"controller unknown field", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":true,"force":1}`}, 400, `unknown field \"force\"`},
		{"controller wrong type", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":"yes"}`}, 400, `field \"enabled\" must be bool`},
		{"controller missing field", req{method: "PUT", path: "/api/controllers/node", body: `{}`}, 400, `{\"enabled\": true}`},
		{"controller empty body", req{method: "PUT", path: "/api/controllers/node"}, 400, "JSON body is required"},
		{"controller two values", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":true}{}`}, 400, "more than one value"},
		{"unknown controller", req{method: "PUT", path: "/api/controllers/bogus", body: `{"enabled":true}`}, 404, `unknown controller \"bogus\"`},
		{"controller absent in profile", req{method: "PUT", path: "/api/controllers/service", body: `{"enabled":true}`}, 409, "the kubevirt profile has no service controller"},
		{"add-on absent", req{method: "PUT", path: "/api/controllers/lbc", body: `{"enabled":false}`}, 409, "no lbc controller"},
		{"controllers wrong method", req{method: "POST", path: "/api/controllers"}, 405, "method POST is not allowed on /api/controllers"},
		{"no such endpoint", req{method: "GET", path: "/api/nothing"}, 404, "no such endpoint"},
		{"instances", req{method: "GET", path: "/api/cloud/instances"}, 200, id},
		{"launch", req{method: "POST", path: "/api/cloud/instances", body: `{"zone":"ap-northeast-1c"}`}, 201, `"zone":"ap-northeast-1c"`},
		{"launch bad zone", req{method: "POST", path: "/api/cloud/instances", body: `{"zone":"us-east-1a"}`}, 400, "us-east-1a"},
		{"launch unknown field", req{method: "POST", path: "/api/cloud/instances", body: `{"count":3}`}, 400, `unknown field \"count\"`},
		{"stop unknown instance", req{method: "POST", path: "/api/cloud/instances/i-00000000000000000/stop"}, 404, "InvalidInstanceID.NotFound"},
		{"unknown instance action", req{method: "POST", path: "/api/cloud/instances/" + id + "/reboot"}, 404, "unknown instance action"},
		{"stop", req{method: "POST", path: "/api/cloud/instances/" + id + "/stop"}, 200, `"state":"stopped"`},
		{"start", req{method: "POST", path: "/api/cloud/instances/" + id + "/start"}, 200, `"state":"running"`},
		{"terminate unknown", req{method: "DELETE", path: "/api/cloud/instances/i-nope"}, 404, "InvalidInstanceID"},
		{"loadbalancers", req{method: "GET", path: "/api/cloud/loadbalancers"}, 200, "["},
		{"routes", req{method: "GET", path: "/api/cloud/routes"}, 200, "["},
		{"calls", req{method: "GET", path: "/api/cloud/calls?since=0"}, 200, `"action":"RunInstances"`},
		{"calls bad since", req{method: "GET", path: "/api/cloud/calls?since=-1"}, 400, "since must be a non-negative integer"},
		{"faults", req{method: "GET", path: "/api/cloud/faults"}, 200, `"deny"`},
		{"set faults", req{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["CreateLoadBalancer"],"latency":"10ms","qps":5,"burst":10}`}, 200, `"CreateLoadBalancer"`},
		{"faults unknown action", req{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["LaunchRockets"]}`}, 400, "LaunchRockets"},
		{"faults bad latency", req{method: "PUT", path: "/api/cloud/faults", body: `{"latency":"soon"}`}, 400, `duration \"soon\"`},
		{"clear faults", req{method: "PUT", path: "/api/cloud/faults", body: `{}`}, 200, `"qps":0`},
		{"faults latency of hours", req{method: "PUT", path: "/api/cloud/faults", body: `{"latency":"9999h"}`}, 400, "latency 9999h0m0s: must be at most 1m0s"},
		{"faults qps too high", req{method: "PUT", path: "/api/cloud/faults", body: `{"qps":5000,"burst":5000}`}, 400, "qps 5000: must be at most 1000"},
		{"stepmode", req{method: "GET", path: "/api/cloud/stepmode"}, 200, `"enabled":false`},
		{"release without step mode", req{method: "POST", path: "/api/cloud/stepmode/release"}, 409, "step mode is off"},
		{"stepmode on", req{method: "PUT", path: "/api/cloud/stepmode", body: `{"enabled":true}`}, 200, `"enabled":true`},
		{"release with nothing waiting", req{method: "POST", path: "/api/cloud/stepmode/release"}, 409, "no cloud call is waiting"},
		{"stepmode off", req{method: "PUT", path: "/api/cloud/stepmode", body: `{"enabled":false}`}, 200, `"enabled":false`},
		{"service flow unknown", req{method: "GET", path: "/api/flows/services/default/nope"}, 404, "no LoadBalancer Service default/nope"},
		{"node flow unknown", req{method: "GET", path: "/api/flows/nodes/nope"}, 404, "no node nope"},
		{"requests without data plane", req{method: "POST", path: "/api/requests", body: `{"service":"default/web"}`}, 503, "without a data plane"},
		{"traces", req{method: "GET", path: "/api/traces"}, 200, "[]"},
		{"recording", req{method: "GET", path: "/api/recording"}, 200, `"type":"recording"`},
		{"recording since a seq", req{method: "GET", path: "/api/recording?since=0"}, 200, `"type":"snapshot"`},
		{"recording bad since", req{method: "GET", path: "/api/recording?since=soon"}, 400, "since must be a non-negative integer (a seq) or an RFC 3339 time"},
		{"wrong content type", req{method: "PUT", path: "/api/controllers/node", body: `x`, header: map[string]string{"Content-Type": "text/plain"}}, 415, "application/json"},
		{"cross-origin mutation", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`, header: map[string]string{"Origin": "http://evil.example"}}, 403, "cross-origin request refused"},
		{"cross-site fetch", req{method: "POST", path: "/api/cloud/instances", header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-origin"},
		{"same-origin mutation", req{method: "PUT", path: "/api/controllers/nodelifecycle", body: `{"enabled":false}`, header: map[string]string{"Origin": "http://localhost:8080"}}, 200, `"nodelifecycle":false`},
	}
	for _, tt := range tests {
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
}

// A refused request must change nothing.
func TestRefusedMutationsChangeNothing(t *testing.T) {
	l := newTestLab(t, "")
	before := l.ctrl.Status()
	faultsBefore := l.cloud.Faults()
	for _, r := range []req{
		{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false,"extra":1}`},
		{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`, header: map[string]string{"Origin": "http://evil.example"}},
		{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["CreateLoadBalancer","Nope"]}`},
		{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["CreateLoadBalancer"],"qps":-1}`},
		{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["CreateLoadBalancer"],"latency":"9999h"}`},
		{method: "PUT", path: "/api/cloud/faults", body: `{"deny":["CreateLoadBalancer"],"qps":5,"burst":100000}`},
		{method: "DELETE", path: "/api/cloud/instances/" + l.inst.ID, header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		if code, body := l.do(r); code < 400 {
			t.Fatalf("%s %s was accepted: %d %s", r.method, r.path, code, body)
		}
	}
	if got := l.ctrl.Status(); got["node"] != before["node"] {
		t.Errorf("controllers changed: %v -> %v", before, got)
	}
	if got := l.cloud.Faults(); !reflect.DeepEqual(got, faultsBefore) {
		t.Errorf("faults changed: %+v -> %+v", faultsBefore, got)
	}
	if inst, _ := l.cloud.LookupInstance(l.inst.ID); inst.State != cloud.InstanceRunning {
		t.Errorf("instance is %s", inst.State)
	}
}

// A controller whose previous instance still drains is a 503 the client may
// retry, and says when.
func TestControllerBusy(t *testing.T) {
	l := newTestLab(t, "")
	l.ctrl.busy = "node"
	_ = l.ctrl.set("node", false)
	hr := httptest.NewRequest("PUT", "http://localhost/api/controllers/node", strings.NewReader(`{"enabled":true}`))
	hr.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	l.srv.ServeHTTP(rec, hr)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "controller busy") {
		t.Fatalf("got %d %s, want 503 controller busy", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After = %q, want 5", got)
	}
	if l.ctrl.Status()["node"] {
		t.Error("a busy controller was switched on")
	}
}

func TestToken(t *testing.T) {
	l := newTestLab(t, "s3cret")
	tests := []struct {
		name     string
		req      req
		wantCode int
	}{
		{"healthz is open", req{method: "GET", path: "/healthz"}, 200},
		{"no token", req{method: "GET", path: "/api/state"}, 401},
		{"wrong token", req{method: "GET", path: "/api/state", header: map[string]string{"Authorization": "Bearer nope"}}, 401},
		{"bearer", req{method: "GET", path: "/api/state", header: map[string]string{"Authorization": "Bearer s3cret"}}, 200},
		{"query sets cookie", req{method: "GET", path: "/api/state?token=s3cret"}, 200},
		{"cookie", req{method: "GET", path: "/api/controllers", header: map[string]string{"Cookie": tokenCookie + "=s3cret"}}, 200},
		{"mutation without token", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`}, 401},
		{"websocket without token", req{method: "GET", path: "/ws"}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := l.do(tt.req); code != tt.wantCode {
				t.Fatalf("got %d %s, want %d", code, body, tt.wantCode)
			}
		})
	}
	if !l.ctrl.Status()["node"] {
		t.Fatal("a request without the token switched the node controller off")
	}
}
