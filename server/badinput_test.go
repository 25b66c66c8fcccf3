package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/history"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server/hub"
)

// cheapLab is a lab without a control plane: a cloud, fake controllers, a
// flow observer and the exercises on a fake clientset, a hub. The bad-input
// suites are about the HTTP contract; nothing here needs a real cluster.
type cheapLab struct {
	srv    *Server
	cloud  *cloud.Cloud
	ctrl   *fakeControllers
	ex     *exercises.Service
	client *fake.Clientset
	inst   cloud.Instance
	// restarts are the restarts asked for (Lab.Restart); a refused
	// request asks for none.
	restarts *[]string
	// clients numbers the requests: each comes from an address of its
	// own unless its case names one, so the cases, independent of each
	// other, do not spend one client's budget of failed sign-ins.
	clients atomic.Uint32
}

func newCheapLab(t *testing.T, token string) *cheapLab {
	t.Helper()
	return newCheapLabOn(t, token, nil)
}

// newCheapLabOn is newCheapLab with a data dir on disk (nil: none): the
// cloud's state file and the server's space probe are written through it,
// the progress database lives in it.
func newCheapLabOn(t *testing.T, token string, disk *datafs.Switch) *cheapLab {
	t.Helper()
	var (
		ccfg    cloud.Config
		dataDir string
		files   datafs.Writer
	)
	if disk != nil {
		dataDir, files = t.TempDir(), disk
		ccfg = cloud.Config{StatePath: filepath.Join(dataDir, "cloud.json"), Files: disk}
	}
	c, err := cloud.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // its writer stops before the data dir goes
	inst, err := c.RunInstance(context.Background(), cloud.RunInstanceInput{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &fakeControllers{on: map[string]bool{"node": true, "nodelifecycle": true, "route": true, "service": true}}
	client := fake.NewClientset()
	obs, err := flow.New(flow.Config{Client: client, Cloud: c, Controllers: ctrl.Status})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = obs.Run(ctx) }()
	if err := obs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	hst, err := history.New(history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := progress.Open(filepath.Join(cmp.Or(dataDir, t.TempDir()), "progress.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	p, _ := profile.Get("aws")
	ex, err := exercises.New(exercises.Config{
		Env:   check.Env{Client: client, Cloud: c, Flow: noFlows{}, Controllers: ctrl, Dataplane: noDataplane{}, Profile: p, History: hst},
		Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := hub.New(hub.Config{RecordEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Token: token, Listen: "127.0.0.1:8080", DataDir: dataDir, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	restarts := &[]string{}
	restart := func(profile string, addons []string) error {
		*restarts = append(*restarts, profile+" "+strings.Join(addons, ","))
		return nil
	}
	srv.SetLab(&Lab{Profile: p, Cloud: c, Controllers: ctrl, Flow: obs, Hub: h, Exercises: ex, Epoch: "test", Restart: restart, Client: client})
	srv.SetReady(true)
	return &cheapLab{srv: srv, cloud: c, ctrl: ctrl, ex: ex, client: client, inst: inst, restarts: restarts}
}

// labState is what a refused request must leave as it was.
type labState struct {
	Controllers map[string]bool
	Cloud       cloud.State
	Faults      cloud.Faults
	StepMode    bool
	// Calls counts the cloud calls that succeeded: a request the cloud
	// itself refuses (a bad zone, an unknown instance) is logged as a
	// failed call, the student's own, and changes nothing.
	Calls     int
	Exercises []exercises.Summary
	Details   []exercises.Detail
	Restarts  int
}

func (l *cheapLab) state(t *testing.T) labState {
	t.Helper()
	ctx := context.Background()
	list, err := l.ex.List(ctx, "en")
	if err != nil {
		t.Fatal(err)
	}
	st := labState{Controllers: l.ctrl.Status(), Cloud: l.cloud.Snapshot(), Faults: l.cloud.Faults(),
		StepMode: l.cloud.StepMode(), Exercises: list, Restarts: len(*l.restarts)}
	for _, c := range l.cloud.Calls(0) {
		if c.Error == "" {
			st.Calls++
		}
	}
	for _, id := range []string{"node-init", exercises.MysteryID} {
		d, err := l.ex.Get(ctx, id, "en")
		if err != nil {
			t.Fatal(err)
		}
		st.Details = append(st.Details, d)
	}
	return st
}

// badCase is one request that must be refused.
type badCase struct {
	name   string
	method string
	path   string
	body   string
	header map[string]string // "Host" sets the request's Host, "RemoteAddr" its client
	want   int
	msg    string // a substring of the error message
}

func (l *cheapLab) serve(c badCase) *httptest.ResponseRecorder {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequest(c.method, c.path, body)
	r.Host = "127.0.0.1:8080"
	n := l.clients.Add(1)
	r.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1234", n>>16&0xff, n>>8&0xff, n&0xff)
	for k, v := range c.header {
		switch k {
		case "Host":
			r.Host = v
			continue
		case "RemoteAddr":
			r.RemoteAddr = v
			continue
		}
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	l.srv.ServeHTTP(rec, r)
	return rec
}

// run asserts every case's status, message and JSON shape, and that the
// lab is unchanged after each.
func runBadCases(t *testing.T, l *cheapLab, cases []badCase) {
	t.Helper()
	before := l.state(t)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			rec := l.serve(c)
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == "" {
				t.Fatalf("%d %q is not {\"error\": \"...\"}", rec.Code, rec.Body)
			}
			if rec.Code != c.want || !strings.Contains(e["error"], c.msg) {
				t.Fatalf("%s %s = %d %q, want %d containing %q", c.method, c.path, rec.Code, e["error"], c.want, c.msg)
			}
			if after := l.state(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("the lab changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// route is one mutating endpoint with a body it would accept.
type route struct {
	method, path, body string
	// decodes: the body is read before anything else can refuse it.
	decodes bool
}

func mutatingRoutes(inst string) []route {
	return []route{
		{"PUT", "/api/controllers/node", `{"enabled":false}`, true},
		{"POST", "/api/cloud/instances", `{"zone":"ap-northeast-1c","instanceType":"t3.small"}`, true},
		{"DELETE", "/api/cloud/instances/" + inst, ``, false},
		{"POST", "/api/cloud/instances/" + inst + "/stop", ``, false},
		{"PUT", "/api/cloud/faults", `{"latency":"10ms","qps":5,"burst":10}`, true},
		{"PUT", "/api/cloud/stepmode", `{"enabled":true}`, true},
		{"POST", "/api/cloud/stepmode/release", ``, false},
		{"POST", "/api/requests", `{"service":"default/web"}`, false},
		{"POST", "/api/exercises/node-init/check", ``, false},
		{"POST", "/api/exercises/node-init/reset", `{}`, true},
		{"POST", "/api/exercises/review/quiz/q1", `{"choice":0}`, true},
		{"POST", "/api/exercises/mystery-pending/cause", `{"cause":"iam-deny"}`, true},
		{"POST", "/api/exercises/node-init/steps/provider-id/answer", `{"answer":"i-1"}`, true},
		{"POST", "/api/exercises/node-init/steps/launch/hint", ``, false},
		{"POST", "/api/console", `{"command":"kubectl get nodes"}`, false},
		{"POST", "/api/lab/restart", `{"profile":"kubevirt","addons":[]}`, true},
	}
}

// badBodies turn a good JSON object body into refused ones.
func badBodies(good string) []struct {
	name, ct, body string
	want           int
	msg            string
} {
	inner := strings.TrimSuffix(strings.TrimPrefix(good, "{"), "}")
	firstKV, _, _ := strings.Cut(inner, ",")
	withKey := func(extra string) string {
		if inner == "" {
			return "{" + extra + "}"
		}
		return "{" + inner + "," + extra + "}"
	}
	key, _, _ := strings.Cut(firstKV, ":")
	dup := withKey(`"zz":1`)
	dupMsg := `unknown field "zz"`
	if firstKV != "" {
		dup, dupMsg = withKey(firstKV), "key "+key+" appears twice"
	}
	// The first key again as encoding/json would still match it (ſ for s,
	// the Kelvin sign for k, or a capital).
	foldedDup := `{"zz":1,"ZZ":2}`
	if firstKV != "" {
		foldedDup = withKey(foldedVariant(key) + strings.TrimPrefix(firstKV, key))
	}
	const js = "application/json"
	return []struct {
		name, ct, body string
		want           int
		msg            string
	}{
		{"text/plain", "text/plain", good, 415, "application/json"},
		{"jsonp", "application/jsonp", good, 415, "application/json"},
		{"form", "application/x-www-form-urlencoded", good, 415, "application/json"},
		{"multipart", "multipart/form-data; boundary=x", good, 415, "application/json"},
		{"json-seq", "application/json-seq", good, 415, "application/json"},
		{"text/json", "text/json", good, 415, "application/json"},
		{"no content type", "", good, 415, "Content-Type: application/json"},
		{"latin1", "application/json; charset=latin1", good, 415, "charset"},
		{"extra param", "application/json; version=2", good, 415, "charset"},
		{"dup key", js, dup, 400, dupMsg},
		{"unknown field", js, withKey(`"force":true`), 400, `unknown field "force"`},
		{"trailing garbage", js, good + " x", 400, "malformed JSON"},
		{"two values", js, good + good, 400, "more than one value"},
		{"oversized", js, withKey(`"pad":"` + strings.Repeat("x", 1<<20) + `"`), 413, "larger than"},
		{"truncated", js, strings.TrimSuffix(good, "}"), 400, "malformed JSON"},
		{"array", js, `[` + good + `]`, 400, "must be"},
		{"string", js, `"` + strings.ReplaceAll(good, `"`, `'`) + `"`, 400, "must be"},
		{"null byte", js, "{\x00}", 400, "malformed JSON"},
		{"null", js, "null", 400, "the body is null"},
		{"case-folded dup key", js, foldedDup, 400, "appears twice"},
	}
}

// foldedVariant is key (quoted) spelt so that encoding/json still takes it
// for the same field: an s as ſ, a k as the Kelvin sign, else a capital.
func foldedVariant(key string) string {
	for _, r := range []struct{ from, to string }{{"s", "ſ"}, {"k", "\u212a"}} {
		if i := strings.Index(key, r.from); i >= 0 {
			return key[:i] + r.to + key[i+1:]
		}
	}
	return `"` + strings.ToUpper(key[1:2]) + key[2:]
}

func guardCases(rt route, prefix string, hdr map[string]string) []badCase {
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range hdr {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	name := prefix + rt.method + " " + rt.path + " "
	var out []badCase
	bodyHdr := func(kv ...string) map[string]string {
		if rt.body != "" {
			kv = append(kv, "Content-Type", "application/json")
		}
		return with(kv...)
	}
	for _, host := range []string{"evil.example:8080", "evil.example", "localhost.evil.example:8080", "10.0.0.1:8080", "127.0.0.1.nip.io:8080", ""} {
		out = append(out, badCase{name + "host " + host, rt.method, rt.path, rt.body,
			bodyHdr("Host", host, "Origin", "http://"+host), http.StatusMisdirectedRequest, "is not this server's"})
	}
	for _, o := range []struct{ k, v string }{
		{"Origin", "http://evil.example"}, {"Origin", "null"}, {"Origin", "http://127.0.0.1:9999"},
		{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"},
	} {
		out = append(out, badCase{name + o.k + " " + o.v, rt.method, rt.path, rt.body, bodyHdr(o.k, o.v), http.StatusForbidden, "cross-origin request refused"})
	}
	for _, m := range []string{"PATCH", map[string]string{"PUT": "POST", "POST": "PUT", "DELETE": "PUT"}[rt.method]} {
		out = append(out, badCase{name + "method " + m, m, rt.path, rt.body, bodyHdr(), http.StatusMethodNotAllowed, "method " + m + " is not allowed"})
	}
	out = append(out,
		badCase{name + "repeated lang", rt.method, rt.path + "?lang=ja&lang=en", rt.body, bodyHdr(), http.StatusBadRequest, `is given 2 times`},
		badCase{name + "malformed query", rt.method, rt.path + "?lang=%zz", rt.body, bodyHdr(), http.StatusBadRequest, "malformed query"},
	)
	return out
}

func bodyCases(rt route, prefix string, hdr map[string]string) []badCase {
	if !rt.decodes {
		return nil
	}
	var out []badCase
	for _, b := range badBodies(rt.body) {
		h := map[string]string{}
		for k, v := range hdr {
			h[k] = v
		}
		if b.ct != "" {
			h["Content-Type"] = b.ct
		}
		out = append(out, badCase{prefix + rt.method + " " + rt.path + " body " + b.name, rt.method, rt.path, b.body, h, b.want, b.msg})
	}
	return out
}

// TestBadInput: every mutating route, refused for each way a request can
// be wrong (Host, origin, method, query, content type, body), with a clear
// 4xx, and the lab unchanged.
func TestBadInput(t *testing.T) {
	l := newCheapLab(t, "")
	id := l.inst.ID
	var cases []badCase
	for _, rt := range mutatingRoutes(id) {
		cases = append(cases, guardCases(rt, "", nil)...)
		cases = append(cases, bodyCases(rt, "", nil)...)
	}
	js := map[string]string{"Content-Type": "application/json"}
	cases = append(cases, []badCase{
		{"calls since repeated", "GET", "/api/cloud/calls?since=1&since=x", "", nil, 400, "is given 2 times"},
		{"calls since negative", "GET", "/api/cloud/calls?since=-1", "", nil, 400, "since must be a non-negative integer"},
		{"calls since word", "GET", "/api/cloud/calls?since=soon", "", nil, 400, "since must be a non-negative integer"},
		{"recording since repeated", "GET", "/api/recording?since=1&since=2", "", nil, 400, "is given 2 times"},
		{"recording since word", "GET", "/api/recording?since=soon", "", nil, 400, "since must be"},
		{"state from a rebound name", "GET", "/api/state", "", map[string]string{"Host": "evil.example:8080"}, 421, "is not this server's"},
		{"page from a rebound name", "GET", "/", "", map[string]string{"Host": "evil.example:8080"}, 421, "is not this server's"},
		{"healthz from a rebound name", "GET", "/healthz", "", map[string]string{"Host": "evil.example"}, 421, "is not this server's"},
		{"websocket from a rebound name", "GET", "/ws", "", map[string]string{"Host": "evil.example:8080", "Upgrade": "websocket", "Connection": "Upgrade"}, 421, "is not this server's"},
		{"websocket cross-origin", "GET", "/ws", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "http://evil.example"}, 403, "cross-origin request refused"},
		{"websocket cross-site", "GET", "/ws", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-Fetch-Site": "cross-site"}, 403, "cross-origin request refused"},
		{"websocket since repeated", "GET", "/ws?since=1&since=2", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, 400, "is given 2 times"},
		{"unknown controller", "PUT", "/api/controllers/bogus", `{"enabled":false}`, js, 404, `unknown controller "bogus"`},
		{"addon controller absent", "PUT", "/api/controllers/lbc", `{"enabled":false}`, js, 409, "no lbc controller"},
		{"controller enabled missing", "PUT", "/api/controllers/node", `{}`, js, 400, `{"enabled": true}`},
		{"controller enabled null", "PUT", "/api/controllers/node", `{"enabled":null}`, js, 400, `{"enabled": true}`},
		{"controller enabled string", "PUT", "/api/controllers/node", `{"enabled":"false"}`, js, 400, `field "enabled" must be bool`},
		{"controller case-folded dup", "PUT", "/api/controllers/node", `{"enabled":true,"Enabled":false}`, js, 400, ""},
		{"launch bad zone", "POST", "/api/cloud/instances", `{"zone":"us-east-1a"}`, js, 400, "us-east-1a"},
		{"launch count", "POST", "/api/cloud/instances", `{"count":3}`, js, 400, `unknown field "count"`},
		{"launch null", "POST", "/api/cloud/instances", `null`, js, 400, "the body is null"},
		{"faults long s", "PUT", "/api/cloud/faults", `{"qps":1,"qpſ":5}`, js, 400, `key "qpſ" appears twice`},
		{"faults escaped long s", "PUT", "/api/cloud/faults", `{"deny":[],"burst":1,"bur\u017ft":9}`, js, 400, `key "burſt" appears twice`},
		{"terminate unknown", "DELETE", "/api/cloud/instances/i-00000000000000000", "", nil, 404, "InvalidInstanceID"},
		{"stop unknown", "POST", "/api/cloud/instances/i-00000000000000000/stop", "", nil, 404, "InvalidInstanceID"},
		{"reboot", "POST", "/api/cloud/instances/" + id + "/reboot", "", nil, 404, "unknown instance action"},
		{"faults unknown action", "PUT", "/api/cloud/faults", `{"deny":["LaunchRockets"]}`, js, 400, "LaunchRockets"},
		{"faults latency hours", "PUT", "/api/cloud/faults", `{"latency":"9999h"}`, js, 400, "must be at most"},
		{"faults latency word", "PUT", "/api/cloud/faults", `{"latency":"soon"}`, js, 400, `duration "soon"`},
		{"faults qps negative", "PUT", "/api/cloud/faults", `{"qps":-1}`, js, 400, "qps"},
		{"faults qps huge", "PUT", "/api/cloud/faults", `{"qps":5000,"burst":5000}`, js, 400, "at most 1000"},
		{"stepmode missing", "PUT", "/api/cloud/stepmode", `{}`, js, 400, `{"enabled": true}`},
		{"release step mode off", "POST", "/api/cloud/stepmode/release", "", nil, 409, "step mode is off"},
		{"check unknown exercise", "POST", "/api/exercises/nope/check", "", nil, 404, "no exercise"},
		{"reset unknown exercise", "POST", "/api/exercises/nope/reset", "", nil, 404, "no exercise"},
		{"reset with a cause", "POST", "/api/exercises/node-init/reset", `{"cause":"iam-deny"}`, js, 400, "takes no cause"},
		{"quiz no choice", "POST", "/api/exercises/review/quiz/q1", `{}`, js, 400, `{"choice"`},
		{"cause empty", "POST", "/api/exercises/mystery-pending/cause", `{"cause":""}`, js, 400, `{"cause"`},
		{"answer missing", "POST", "/api/exercises/node-init/steps/provider-id/answer", `{}`, js, 400, `{"answer"`},
		{"answer too long", "POST", "/api/exercises/node-init/steps/provider-id/answer", `{"answer":"` + strings.Repeat("x", 300) + `"}`, js, 400, "longer than"},
		{"answer unknown step", "POST", "/api/exercises/node-init/steps/nope/answer", `{"answer":"x"}`, js, 404, "no step"},
		{"answer locked step", "POST", "/api/exercises/node-init/steps/provider-id/answer", `{"answer":"i-1"}`, js, 409, "has not passed"},
		{"requests without data plane", "POST", "/api/requests", `{"service":"default/web"}`, js, 503, "without a data plane"},
		{"console without console", "POST", "/api/console", `{"command":"kubectl get nodes"}`, js, 503, "without a console"},
		{"restart unknown profile", "POST", "/api/lab/restart", `{"profile":"gcp","addons":[]}`, js, 400, `unknown profile "gcp"`},
		{"restart unknown add-on", "POST", "/api/lab/restart", `{"profile":"aws","addons":["rm -rf"]}`, js, 400, `unknown add-on "rm -rf"`},
		{"restart no profile", "POST", "/api/lab/restart", `{"addons":["lbc"]}`, js, 400, "profile"},
		{"restart GET", "GET", "/api/lab/restart", "", nil, 405, ""},
		{"no such endpoint", "POST", "/api/nothing", "", nil, 404, "no such endpoint"},
		{"page POST", "POST", "/", "", nil, 404, "no such endpoint: POST /"},
	}...)
	if len(cases) < 300 {
		t.Fatalf("only %d cases", len(cases))
	}
	t.Logf("%d cases", len(cases))
	runBadCases(t, l, cases)
}

// TestBadInputToken: a lab with a token refuses every mutating route
// without it (401), and the Host and origin checks come first, token or
// not; with the token, bad bodies are refused as without one.
func TestBadInputToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	l := newCheapLab(t, token)
	var cases []badCase
	good := map[string]string{"Authorization": "Bearer " + token}
	for _, rt := range mutatingRoutes(l.inst.ID) {
		for _, a := range []struct{ name, k, v string }{
			{"none", "", ""},
			{"wrong bearer", "Authorization", "Bearer nope"},
			{"prefix of the token", "Authorization", "Bearer " + token[:8]},
			{"token and more", "Authorization", "Bearer " + token + "x"},
			{"lowercase scheme", "Authorization", "bearer " + token},
			{"basic", "Authorization", "Basic " + token},
			{"wrong cookie", "Cookie", tokenCookie + "=nope"},
			{"other cookie", "Cookie", "other=" + token},
		} {
			h := map[string]string{}
			if a.k != "" {
				h[a.k] = a.v
			}
			if rt.body != "" {
				h["Content-Type"] = "application/json"
			}
			cases = append(cases, badCase{fmt.Sprintf("%s %s token %s", rt.method, rt.path, a.name), rt.method, rt.path, rt.body, h, 401, "this lab needs its token"})
		}
		cases = append(cases, badCase{rt.method + " " + rt.path + " wrong query token", rt.method, rt.path + "?token=nope", rt.body, map[string]string{"Content-Type": "application/json"}, 401, "this lab needs its token"})
		for _, c := range guardCases(rt, "with token ", good) {
			if c.want == http.StatusMethodNotAllowed {
				continue // 405 is echo's, after the token: covered without one
			}
			cases = append(cases, c)
		}
		cases = append(cases, bodyCases(rt, "with token ", good)...)
	}
	cases = append(cases,
		badCase{"websocket without token", "GET", "/ws", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, 401, "needs its token"},
		badCase{"state without token", "GET", "/api/state", "", nil, 401, "needs its token"},
		badCase{"recording without token", "GET", "/api/recording", "", nil, 401, "needs its token"},
		badCase{"token from a rebound name", "GET", "/api/state?token=" + token, "", map[string]string{"Host": "evil.example"}, 421, "is not this server's"},
	)
	t.Logf("%d cases", len(cases))
	runBadCases(t, l, cases)
}

// TestBadInputTokenGuesses: one client's wrong tokens (bearer, query or
// cookie) are refused 401 ten times, then 429 with Retry-After, and while
// it lasts even the right token is not compared; another client is not
// held back, and after the wait the right token opens the lab again.
func TestBadInputTokenGuesses(t *testing.T) {
	const token = "0123456789abcdef-token"
	l := newCheapLab(t, token)
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var err error
	if l.srv.signIns, err = httpguard.NewSignIns(httpguard.SignInConfig{Clock: fc}); err != nil {
		t.Fatal(err)
	}
	const guesser = "192.0.2.66:40000"
	from := func(addr string, kv ...string) map[string]string {
		h := map[string]string{"RemoteAddr": addr, "Content-Type": "application/json"}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	put := func(name, path string, h map[string]string, want int, msg string) badCase {
		return badCase{name, "PUT", path, `{"enabled":false}`, h, want, msg}
	}
	var cases []badCase
	for i := range 10 {
		h := from(guesser, "Authorization", fmt.Sprintf("Bearer guess-%02d", i))
		path := "/api/controllers/node"
		switch i % 3 {
		case 1:
			h = from(guesser)
			path += fmt.Sprintf("?token=guess-%02d", i)
		case 2:
			h = from(guesser, "Cookie", fmt.Sprintf("%s=guess-%02d", tokenCookie, i))
		}
		cases = append(cases, put(fmt.Sprintf("guess %d", i+1), path, h, 401, "this lab needs its token"))
	}
	cases = append(cases,
		put("no token is no guess", "/api/controllers/node", from(guesser), 401, "this lab needs its token"),
		put("guess 11", "/api/controllers/node", from(guesser, "Authorization", "Bearer guess-11"), 429, "too many failed sign-ins; try again in 6 s"),
		put("the right token while refused", "/api/controllers/node", from(guesser, "Authorization", "Bearer "+token), 429, "too many failed sign-ins"),
		put("the right token in the query while refused", "/api/controllers/node?token="+token, from(guesser), 429, "too many failed sign-ins"),
		put("another client, wrong token", "/api/controllers/node", from("192.0.2.67:1", "Authorization", "Bearer nope"), 401, "this lab needs its token"),
		badCase{"a websocket while refused", "GET", "/ws", "", from(guesser, "Authorization", "Bearer "+token, "Upgrade", "websocket", "Connection", "Upgrade"), 429, "too many failed sign-ins"},
	)
	runBadCases(t, l, cases)

	rec := l.serve(badCase{method: "GET", path: "/api/state", header: from(guesser, "Authorization", "Bearer "+token)})
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "6" {
		t.Fatalf("still refused: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := l.serve(badCase{method: "GET", path: "/api/state", header: from("198.51.100.1:1", "Authorization", "Bearer "+token)}); rec.Code != 200 {
		t.Fatalf("another client with the right token: %d %s", rec.Code, rec.Body)
	}
	fc.Step(6 * time.Second)
	if rec := l.serve(badCase{method: "GET", path: "/api/state", header: from(guesser, "Authorization", "Bearer "+token)}); rec.Code != 200 {
		t.Fatalf("the right token after the wait: %d %s", rec.Code, rec.Body)
	}
	// Right tokens cost nothing: one wrong guess is all the budget there
	// is, however many right ones came before.
	for range 20 {
		if rec := l.serve(badCase{method: "GET", path: "/api/state", header: from(guesser, "Authorization", "Bearer "+token)}); rec.Code != 200 {
			t.Fatalf("the right token again: %d", rec.Code)
		}
	}
	if rec := l.serve(put("", "/api/controllers/node", from(guesser, "Authorization", "Bearer nope"), 0, "")); rec.Code != 401 {
		t.Fatalf("one guess after the wait: %d", rec.Code)
	}
	if rec := l.serve(put("", "/api/controllers/node", from(guesser, "Authorization", "Bearer nope"), 0, "")); rec.Code != 429 {
		t.Fatalf("a second guess after the wait: %d", rec.Code)
	}
	fc.Step(time.Minute)
	if rec := l.serve(badCase{method: "GET", path: "/api/state", header: from(guesser, "Authorization", "Bearer "+token)}); rec.Code != 200 {
		t.Fatalf("the right token after the window: %d %s", rec.Code, rec.Body)
	}
}

// A good restart request reaches Lab.Restart once, with the add-ons
// deduplicated, and answers 202; without Lab.Restart it is 409.
func TestRestartRequest(t *testing.T) {
	l := newCheapLab(t, "")
	rec := l.serve(badCase{method: "POST", path: "/api/lab/restart", body: `{"profile":"kubevirt","addons":["lbc","lbc"]}`,
		header: map[string]string{"Content-Type": "application/json"}})
	if rec.Code != 202 || !strings.Contains(rec.Body.String(), `"restarting":true`) {
		t.Fatalf("restart: %d %s", rec.Code, rec.Body)
	}
	if got := *l.restarts; len(got) != 1 || got[0] != "kubevirt lbc" {
		t.Fatalf("restarts asked for: %q", got)
	}
	lab := *l.srv.l()
	lab.Restart = nil
	l.srv.SetLab(&lab)
	rec = l.serve(badCase{method: "POST", path: "/api/lab/restart", body: `{"profile":"kubevirt","addons":[]}`,
		header: map[string]string{"Content-Type": "application/json"}})
	if rec.Code != 409 || !strings.Contains(rec.Body.String(), "cannot restart itself") {
		t.Fatalf("restart without Lab.Restart: %d %s", rec.Code, rec.Body)
	}
}
