package classroom

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// recordingLab is a fake lab that lists two exercises and the challenge's
// causes, and records every request that could change it.
type recordingLab struct {
	mu        sync.Mutex
	mutations []string
}

func (l *recordingLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/exercises":
		_, _ = io.WriteString(w, `[{"id":"node-init","title":"Node","steps":3},{"id":"mystery-pending","title":"Mystery","steps":2}]`)
	case r.Method == http.MethodGet && r.URL.Path == "/api/exercises/mystery-pending":
		_, _ = io.WriteString(w, `{"id":"mystery-pending","causes":[{"id":"iam-deny","en":"IAM deny"},{"id":"throttling","en":"Throttling"}]}`)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		_, _ = io.WriteString(w, `{}`)
	default:
		l.mu.Lock()
		l.mutations = append(l.mutations, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}
}

func (l *recordingLab) changes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.mutations...)
}

type portalCase struct {
	name, method, path, body string
	header                   map[string]string // "Host" sets the request's Host, "RemoteAddr" its client
	want                     int
	msg                      string
}

const portalInstructor = "instructor-secret-token"

func newBadInputPortal(t *testing.T) (*Classroom, map[string]*recordingLab) {
	t.Helper()
	c, err := New(Config{Students: []string{"alice", "bob"}, DataDir: t.TempDir(), Token: portalInstructor, Binary: "/bin/false",
		PublicURL: "https://class.example.com/", Listen: "127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	labs := map[string]*recordingLab{}
	addrs := map[string]string{}
	for _, s := range []string{"alice", "bob"} {
		labs[s] = &recordingLab{}
		srv := httptest.NewServer(labs[s])
		t.Cleanup(srv.Close)
		addrs[s] = strings.TrimPrefix(srv.URL, "http://")
	}
	c.backend = fakeBackend{addrs: addrs}
	c.class.status = c.backend.Status
	return c, labs
}

func serveCase(c *Classroom, pc portalCase) *httptest.ResponseRecorder {
	var body io.Reader
	if pc.body != "" {
		body = strings.NewReader(pc.body)
	}
	r := httptest.NewRequest(pc.method, "http://localhost:8080"+pc.path, body)
	// Each case is a client of its own, at an address drawn from its
	// name, unless it names one: the cases are independent of each other
	// and must not spend one client's budget of failed sign-ins.
	h := fnv.New32a()
	_, _ = io.WriteString(h, pc.name)
	n := h.Sum32()
	r.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1234", byte(n>>16), byte(n>>8), byte(n))
	for k, v := range pc.header {
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
	c.Handler().ServeHTTP(rec, r)
	return rec
}

// portalState is what a refused request must leave as it was.
type portalState struct {
	Instructor string
	Students   map[string]string
	Class      Class
	Mutations  map[string][]string
}

func statePortal(c *Classroom, labs map[string]*recordingLab) portalState {
	cl := c.class.snapshot()
	cl.Time = time.Time{}
	st := portalState{Instructor: c.tokens.instructor, Students: map[string]string{}, Class: cl, Mutations: map[string][]string{}}
	for k, v := range c.tokens.students {
		st.Students[k] = v
	}
	for s, l := range labs {
		st.Mutations[s] = l.changes()
	}
	return st
}

// TestPortalBadInput: the portal's actions and the students' labs behind
// it refuse every bad request (Host, origin, query, token, body, unknown
// names, exercises and causes) with a clear 4xx, and nothing reaches a lab.
func TestPortalBadInput(t *testing.T) {
	c, labs := newBadInputPortal(t)
	teacher := map[string]string{"Authorization": "Bearer " + portalInstructor}
	alice := map[string]string{"Authorization": "Bearer " + c.StudentToken("alice")}
	bob := map[string]string{"Authorization": "Bearer " + c.StudentToken("bob")}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	type route struct{ method, path, body string }
	actions := []route{
		{"POST", "/api/actions/reset", `{"exercise":"node-init","students":["alice"]}`},
		{"PUT", "/api/actions/latency", `{"latency":"2s","students":["alice"]}`},
		{"POST", "/api/actions/challenge", `{"cause":"iam-deny","students":["alice"]}`},
	}
	labRoutes := []route{
		{"PUT", "/s/alice/api/controllers/node", `{"enabled":false}`},
		{"POST", "/s/alice/api/cloud/instances", `{}`},
		{"DELETE", "/s/alice/api/cloud/instances/i-0123456789abcdef0", ``},
		{"PUT", "/s/alice/api/cloud/faults", `{"latency":"1s"}`},
		{"POST", "/s/alice/api/exercises/node-init/reset", `{}`},
		{"POST", "/s/alice/api/exercises/mystery-pending/cause", `{"cause":"iam-deny"}`},
	}
	var cases []portalCase
	guard := func(rt route, auth map[string]string) {
		name := rt.method + " " + rt.path + " "
		h := with(auth, "Content-Type", "application/json")
		for _, host := range []string{"evil.example:8080", "evil.example", "class.example.com.evil.example", "10.0.0.1:8080", "localhost.evil.example", ""} {
			cases = append(cases, portalCase{name + "host " + host, rt.method, rt.path, rt.body, with(h, "Host", host, "Origin", "http://"+host), 421, "is not this server's"})
		}
		for _, o := range [][2]string{{"Origin", "http://evil.example"}, {"Origin", "null"}, {"Origin", "https://class.example.com.evil.example"}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}} {
			cases = append(cases, portalCase{name + o[0] + " " + o[1], rt.method, rt.path, rt.body, with(h, o[0], o[1]), 403, "cross-origin request refused"})
		}
		cases = append(cases,
			portalCase{name + "repeated token", rt.method, rt.path + "?token=a&token=b", rt.body, h, 400, "is given 2 times"},
			portalCase{name + "repeated lang", rt.method, rt.path + "?lang=ja&lang=en", rt.body, h, 400, "is given 2 times"},
			portalCase{name + "malformed query", rt.method, rt.path + "?x=%zz", rt.body, h, 400, "malformed query"},
		)
	}
	for _, rt := range actions {
		guard(rt, teacher)
		name := rt.method + " " + rt.path + " "
		js := map[string]string{"Content-Type": "application/json"}
		cases = append(cases,
			portalCase{name + "no token", rt.method, rt.path, rt.body, js, 401, "needs a token"},
			portalCase{name + "wrong token", rt.method, rt.path, rt.body, with(js, "Authorization", "Bearer nope"), 403, "does not open this page"},
			portalCase{name + "a student's token", rt.method, rt.path, rt.body, with(alice, "Content-Type", "application/json"), 403, "does not open this page"},
			portalCase{name + "wrong cookie", rt.method, rt.path, rt.body, with(js, "Cookie", instructorCookie+"=nope"), 403, "does not open this page"},
			portalCase{name + "wrong query token", rt.method, rt.path + "?token=nope", rt.body, js, 403, "does not open this page"},
		)
		for _, b := range portalBadBodies(rt.body) {
			h := with(teacher)
			if b.ct != "" {
				h["Content-Type"] = b.ct
			}
			cases = append(cases, portalCase{name + "body " + b.name, rt.method, rt.path, b.body, h, b.want, b.msg})
		}
		cases = append(cases,
			portalCase{name + "unknown student", rt.method, rt.path, strings.Replace(rt.body, `"alice"`, `"mallory"`, 1), with(teacher, "Content-Type", "application/json"), 400, `no student "mallory"`},
			portalCase{name + "student twice", rt.method, rt.path, strings.Replace(rt.body, `"alice"`, `"alice","alice"`, 1), with(teacher, "Content-Type", "application/json"), 400, "named twice"},
			portalCase{name + "students not a list", rt.method, rt.path, strings.Replace(rt.body, `["alice"]`, `"alice"`, 1), with(teacher, "Content-Type", "application/json"), 400, `students" must be []string`},
		)
	}
	tjs := with(teacher, "Content-Type", "application/json")
	cases = append(cases, []portalCase{
		{"reset unknown exercise", "POST", "/api/actions/reset", `{"exercise":"nope"}`, tjs, 404, `no exercise "nope"`},
		{"reset exercise of another shape", "POST", "/api/actions/reset", `{"exercise":"../cloud/faults"}`, tjs, 400, "give an exercise's id"},
		{"reset exercise upper case", "POST", "/api/actions/reset", `{"exercise":"Node-Init"}`, tjs, 400, "give an exercise's id"},
		{"reset no exercise", "POST", "/api/actions/reset", `{}`, tjs, 400, "say which exercise"},
		{"reset 1 MB", "POST", "/api/actions/reset", `{"exercise":"` + strings.Repeat("x", 1<<20) + `"}`, tjs, 413, "larger than"},
		{"challenge unknown cause", "POST", "/api/actions/challenge", `{"cause":"cosmic-rays"}`, tjs, 400, `cause "cosmic-rays"`},
		{"challenge cause of another shape", "POST", "/api/actions/challenge", `{"cause":"Drop Table"}`, tjs, 400, "give a cause's id"},
		{"latency negative", "PUT", "/api/actions/latency", `{"latency":"-1s"}`, tjs, 400, "want a duration"},
		{"latency hours", "PUT", "/api/actions/latency", `{"latency":"2h"}`, tjs, 400, "want a duration"},
		{"latency word", "PUT", "/api/actions/latency", `{"latency":"soon"}`, tjs, 400, "want a duration"},
		{"latency missing", "PUT", "/api/actions/latency", `{}`, tjs, 400, "want a duration"},
		{"latency number", "PUT", "/api/actions/latency", `{"latency":2}`, tjs, 400, `field "latency" must be string`},
	}...)
	for _, rt := range labRoutes {
		guard(rt, alice)
		name := rt.method + " " + rt.path + " "
		js := map[string]string{"Content-Type": "application/json"}
		cases = append(cases,
			portalCase{name + "no token", rt.method, rt.path, rt.body, js, 401, "needs a token"},
			portalCase{name + "wrong token", rt.method, rt.path, rt.body, with(js, "Authorization", "Bearer nope"), 403, "does not open this page"},
			portalCase{name + "another student's token", rt.method, rt.path, rt.body, with(bob, "Content-Type", "application/json"), 403, "does not open this page"},
			portalCase{name + "the instructor writes", rt.method, rt.path, rt.body, tjs, 403, "read-only"},
			portalCase{name + "another student's cookie", rt.method, rt.path, rt.body, with(js, "Cookie", studentCookie+"="+c.StudentToken("bob")), 403, "does not open this page"},
		)
		// A name not in the class answers exactly as a real one.
		for _, other := range []string{"mallory", "Bad_Name"} {
			p := strings.Replace(rt.path, "/s/alice/", "/s/"+other+"/", 1)
			cases = append(cases,
				portalCase{name + other + " no token", rt.method, p, rt.body, js, 401, "needs a token"},
				portalCase{name + other + " a student's token", rt.method, p, rt.body, with(alice, "Content-Type", "application/json"), 403, "does not open this page"},
			)
		}
	}
	ws := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Authorization": "Bearer " + c.StudentToken("alice")}
	cases = append(cases,
		portalCase{"websocket cross-origin", "GET", "/s/alice/ws", "", with(ws, "Origin", "http://evil.example"), 403, "cross-origin request refused"},
		portalCase{"websocket cross-site", "GET", "/s/alice/ws", "", with(ws, "Sec-Fetch-Site", "cross-site"), 403, "cross-origin request refused"},
		portalCase{"websocket rebound name", "GET", "/s/alice/ws", "", with(ws, "Host", "evil.example:8080"), 421, "is not this server's"},
		portalCase{"websocket another student's", "GET", "/s/bob/ws", "", ws, 403, "does not open this page"},
		portalCase{"dashboard rebound name", "GET", "/", "", with(teacher, "Host", "evil.example"), 421, "is not this server's"},
		portalCase{"healthz rebound name", "GET", "/healthz", "", map[string]string{"Host": "evil.example"}, 421, "is not this server's"},
		portalCase{"students.csv rebound name", "GET", "/students.csv", "", with(teacher, "Host", "evil.example"), 421, "is not this server's"},
	)
	// One client's failed sign-ins: ten are answered as any wrong token
	// is, the eleventh 429, and then no token of that client is compared,
	// the right ones included, until the wait is over (after the loop).
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	var err error
	if c.signIns, err = httpguard.NewSignIns(httpguard.SignInConfig{Clock: fc}); err != nil {
		t.Fatal(err)
	}
	const guesser = "192.0.2.66:40000"
	from := func(addr string, kv ...string) map[string]string {
		return with(map[string]string{"RemoteAddr": addr}, kv...)
	}
	guesses := []portalCase{
		{"guess 1 bearer on the dashboard's API", "GET", "/api/class", "", from(guesser, "Authorization", "Bearer guess-1"), 403, "does not open this page"},
		{"guess 2 query on the dashboard", "GET", "/?token=guess-2", "", from(guesser), 403, "does not open this page"},
		{"guess 3 instructor cookie", "GET", "/api/class", "", from(guesser, "Cookie", instructorCookie+"=guess-3"), 403, "does not open this page"},
		{"guess 4 bearer on a lab", "GET", "/s/alice/api/state", "", from(guesser, "Authorization", "Bearer guess-4"), 403, "does not open this page"},
		{"guess 5 query on a lab", "GET", "/s/alice/?token=guess-5", "", from(guesser), 403, "does not open this page"},
		{"guess 6 student cookie", "GET", "/s/alice/api/state", "", from(guesser, "Cookie", studentCookie+"=guess-6"), 403, "does not open this page"},
		{"guess 7 a name not in the class", "GET", "/s/mallory/", "", from(guesser, "Authorization", "Bearer guess-7"), 403, "does not open this page"},
		{"guess 8 another student's token", "GET", "/s/alice/api/state", "", from(guesser, "Authorization", "Bearer "+c.StudentToken("bob")), 403, "does not open this page"},
		{"guess 9 a student's token on the dashboard", "POST", "/api/actions/reset", `{"exercise":"node-init","students":["alice"]}`, from(guesser, "Authorization", "Bearer "+c.StudentToken("alice"), "Content-Type", "application/json"), 403, "does not open this page"},
		{"guess 10 websocket", "GET", "/s/alice/ws", "", from(guesser, "Authorization", "Bearer guess-10", "Upgrade", "websocket", "Connection", "Upgrade"), 403, "does not open this page"},
		{"no token is no guess", "GET", "/api/class", "", from(guesser), 401, "needs a token"},
		{"guess 11", "GET", "/api/class", "", from(guesser, "Authorization", "Bearer guess-11"), 429, "too many failed sign-ins; try again in 6 s"},
		{"the instructor's token while refused", "GET", "/api/class", "", from(guesser, "Authorization", "Bearer "+portalInstructor), 429, "too many failed sign-ins"},
		{"the student's token while refused", "GET", "/s/alice/api/state", "", from(guesser, "Authorization", "Bearer "+c.StudentToken("alice")), 429, "too many failed sign-ins"},
		{"a reset with the right token while refused", "POST", "/api/actions/reset", `{"exercise":"node-init","students":["alice"]}`, from(guesser, "Authorization", "Bearer "+portalInstructor, "Content-Type", "application/json"), 429, "too many failed sign-ins"},
		{"another client's wrong token", "GET", "/api/class", "", from("192.0.2.67:1", "Authorization", "Bearer nope"), 403, "does not open this page"},
	}
	cases = append(cases, guesses...)
	t.Logf("%d cases", len(cases))
	before := statePortal(c, labs)
	seen := map[string]bool{}
	for _, pc := range cases {
		if seen[pc.name] {
			t.Fatalf("two cases named %q", pc.name)
		}
		seen[pc.name] = true
		t.Run(pc.name, func(t *testing.T) {
			rec := serveCase(c, pc)
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == "" {
				t.Fatalf("%d %q is not {\"error\": \"...\"}", rec.Code, rec.Body)
			}
			if rec.Code != pc.want || !strings.Contains(e["error"], pc.msg) {
				t.Fatalf("%s %s = %d %q, want %d containing %q", pc.method, pc.path, rec.Code, e["error"], pc.want, pc.msg)
			}
			if after := statePortal(c, labs); !reflect.DeepEqual(before, after) {
				t.Fatalf("something changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	refused := serveCase(c, portalCase{method: "GET", path: "/api/class", header: from(guesser, "Authorization", "Bearer "+portalInstructor)})
	if refused.Code != 429 || refused.Header().Get("Retry-After") != "6" {
		t.Fatalf("the guesser, still refused: %d, Retry-After %q", refused.Code, refused.Header().Get("Retry-After"))
	}
	fc.Step(6 * time.Second)
	if rec := serveCase(c, portalCase{method: "GET", path: "/api/class", header: from(guesser, "Authorization", "Bearer "+portalInstructor)}); rec.Code != 200 {
		t.Fatalf("the right token after the wait: %d %s", rec.Code, rec.Body)
	}
	fc.Step(time.Minute)
	if rec := serveCase(c, portalCase{method: "GET", path: "/s/alice/api/state", header: from(guesser, "Authorization", "Bearer "+c.StudentToken("alice"))}); rec.Code != 200 {
		t.Fatalf("the student's token after the window: %d %s", rec.Code, rec.Body)
	}
	// The barrier: the same portal acts on a good request, so the refusals
	// above were not a portal that reaches no lab at all.
	rec := serveCase(c, portalCase{method: "POST", path: "/api/actions/reset", body: `{"exercise":"node-init","students":["alice"]}`, header: tjs})
	if rec.Code != 200 || len(labs["alice"].changes()) != 1 {
		t.Fatalf("a good reset: %d %s, alice's lab saw %v", rec.Code, rec.Body, labs["alice"].changes())
	}
}

func portalBadBodies(good string) []struct {
	name, ct, body string
	want           int
	msg            string
} {
	inner := strings.TrimSuffix(strings.TrimPrefix(good, "{"), "}")
	first, _, _ := strings.Cut(inner, `,"students"`)
	key, _, _ := strings.Cut(first, ":")
	const js = "application/json"
	return []struct {
		name, ct, body string
		want           int
		msg            string
	}{
		{"text/plain", "text/plain", good, 415, "application/json"},
		{"jsonp", "application/jsonp", good, 415, "application/json"},
		{"form", "application/x-www-form-urlencoded", good, 415, "application/json"},
		{"json-seq", "application/json-seq", good, 415, "application/json"},
		{"no content type", "", good, 415, "Content-Type: application/json"},
		{"latin1", "application/json; charset=latin1", good, 415, "charset"},
		{"dup key", js, "{" + inner + "," + first + "}", 400, "key " + key + " appears twice"},
		{"case-folded dup key", js, "{" + inner + "," + strings.ToUpper(first[:2]) + first[2:] + "}", 400, "appears twice"},
		{"unknown field", js, "{" + inner + `,"force":true}`, 400, `unknown field "force"`},
		{"trailing garbage", js, good + " x", 400, "malformed JSON"},
		{"two values", js, good + good, 400, "more than one value"},
		{"oversized", js, "{" + inner + `,"pad":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "larger than"},
		{"truncated", js, strings.TrimSuffix(good, "}"), 400, "malformed JSON"},
		{"array", js, "[" + good + "]", 400, "must be"},
		{"empty", js, "", 400, "a JSON body is required"},
	}
}

// TestPortalCookieSecure: behind https (the public URL says so, though
// the portal itself hears plain HTTP from its proxy) the token's cookie is
// Secure.
func TestPortalCookieSecure(t *testing.T) {
	c, _ := newBadInputPortal(t)
	rec := serveCase(c, portalCase{method: "GET", path: "/api/class?token=" + portalInstructor})
	ck := rec.Result().Cookies()
	if rec.Code != 200 || len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Fatalf("%d, cookies %+v", rec.Code, ck)
	}
	plain, err := New(Config{Students: []string{"alice"}, DataDir: t.TempDir(), Token: portalInstructor, Binary: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	rec = serveCase(plain, portalCase{method: "GET", path: "/api/class?token=" + portalInstructor})
	if ck := rec.Result().Cookies(); rec.Code != 200 || len(ck) != 1 || ck[0].Secure {
		t.Fatalf("plain http: %d, cookies %+v", rec.Code, ck)
	}
}

// TestLocalLabTokenNotInArgv: a local lab gets its student's token in its
// environment, never on its command line (which ps shows everyone), and
// not the portal's own CCMLAB_TOKEN.
func TestLocalLabTokenNotInArgv(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-ccmlab")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\nprintf '%s' \"$CCMLAB_TOKEN\" > \"$(dirname \"$0\")/token\"\nexit 3\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CCMLAB_TOKEN", "the-instructors-token")
	c, err := New(Config{Students: []string{"alice"}, DataDir: filepath.Join(dir, "class"), Token: portalInstructor, Binary: bin, StartTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tok := c.StudentToken("alice")
	b := c.backend.(*localBackend)
	cmd := b.command(b.labs["alice"], "127.0.0.1:1")
	for _, a := range cmd.Args {
		if strings.Contains(a, tok) {
			t.Fatalf("the token is on the command line: %q", cmd.Args)
		}
	}
	// The real start: the process exits at once, having written down what
	// it was given.
	if _, err := b.Ensure(context.Background(), "alice"); err == nil {
		t.Fatal("a lab that exits was reported ready")
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(args), tok) || strings.Contains(string(args), "--token") {
		t.Errorf("the lab's arguments carry the token:\n%s", args)
	}
	if !strings.HasPrefix(string(args), "serve\n--listen\n") {
		t.Errorf("arguments %q", args)
	}
	if string(got) != tok {
		t.Errorf("CCMLAB_TOKEN in the lab = %q, want the student's token", got)
	}
	b.stopAll()
}
