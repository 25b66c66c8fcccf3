package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// classroom is a classroom-shaped data dir with secrets planted where a
// student's console must never reach: the instructor's and every
// student's token, the lab's and another lab's CA key, another lab's
// kubeconfig (pointing at the canary server).
type classroom struct {
	root, lab, other string
	secrets          []string
	hits             *atomic.Int64
	server           string
}

func newClassroom(t *testing.T) *classroom {
	t.Helper()
	c := &classroom{root: t.TempDir(), hits: &atomic.Int64{}}
	secret := func(what string) string {
		s := "SECRET-" + what + "-" + rand.Text()
		c.secrets = append(c.secrets, s)
		return s
	}
	srvSecret := secret("server")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.hits.Add(1)
		fmt.Fprintln(w, srvSecret)
	}))
	t.Cleanup(srv.Close)
	c.server = srv.URL
	c.lab = filepath.Join(c.root, "students", "alice")
	c.other = filepath.Join(c.root, "students", "bob")
	files := map[string]string{
		"instructor-token":             secret("instructor") + "\n",
		"student-tokens.json":          fmt.Sprintf(`{"alice":%q,"bob":%q}`, secret("alice"), secret("bob")),
		"students.csv":                 "name,url\nalice,http://x/?token=" + secret("csv") + "\n",
		"students/alice/kubeconfig":    "apiVersion: v1\nkind: Config\n# " + secret("own-kubeconfig") + "\n",
		"students/alice/pki/ca.key":    secret("ca-key"),
		"students/alice/pki/admin.key": secret("admin-key"),
		"students/alice/console/note":  secret("old-console-dir"),
		"students/bob/kubeconfig": fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: %s\nusers:\n- name: x\n  user:\n    token: %s\n",
			srv.URL, secret("bob-kubeconfig")),
		"students/bob/pki/ca.key": secret("bob-ca-key"),
		"students/bob.log":        secret("bob-log"),
	}
	for name, content := range files {
		p := filepath.Join(c.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// console is a console of alice's lab that runs the fake kubectl.
func (c *classroom) console(t *testing.T) *Console {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	con, err := New(Config{DataDir: c.lab, Binary: exe, TempDir: t.TempDir(), MaxOutput: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return con
}

// leaks says which secrets text shows.
func (c *classroom) leaks(text string) []string {
	var out []string
	for _, s := range c.secrets {
		if strings.Contains(text, s) {
			out = append(out, s)
		}
	}
	return out
}

// A flag as an attack spells it: long name, shorthand.
type attackFlag struct{ long, short string }

// spellings are the ways kubectl (pflag, cobra) reads the same flag with
// value v: = and space, quoting, the underscore kubectl normalizes to -,
// a backslash, a shorthand on its own, glued to its value, after =, and
// folded behind a boolean shorthand of the subcommand (bool).
func spellings(f attackFlag, v, bool string) [][]string {
	out := [][]string{
		{"--" + f.long + "=" + v},
		{"--" + f.long, v},
		{"--" + f.long + "='" + v + "'"},
		{`"--` + f.long + "=" + v + `"`},
		{"'--" + f.long + "'", v},
		{`\-\-` + f.long + "=" + v},
	}
	if strings.Contains(f.long, "-") {
		out = append(out, []string{"--" + strings.ReplaceAll(f.long, "-", "_") + "=" + v})
	}
	if f.short != "" {
		out = append(out, []string{"-" + f.short, v}, []string{"-" + f.short + v}, []string{"-" + f.short + "=" + v}, []string{"'-" + f.short + "'", v})
		if bool != "" {
			out = append(out, []string{"-" + bool + f.short, v}, []string{"-" + bool + f.short + v}, []string{"-" + bool + f.short + "=" + v})
		}
	}
	return out
}

// attackContext is a subcommand line an attack flag is added to, and a
// boolean shorthand of it to fold flags behind.
type attackContext struct {
	words []string
	bool  string
}

func contexts() map[string]attackContext {
	return map[string]attackContext{
		"get":               {[]string{"get", "pods"}, "A"},
		"logs":              {[]string{"logs", "web"}, "p"},
		"describe":          {[]string{"describe", "svc", "web"}, "A"},
		"delete":            {[]string{"delete", "pod", "x"}, "A"},
		"label":             {[]string{"label", "pod", "x", "a=b"}, "A"},
		"patch":             {[]string{"patch", "svc", "web", "-p", "{}"}, ""},
		"wait":              {[]string{"wait", "pod/x", "--for=delete"}, "A"},
		"expose":            {[]string{"expose", "deploy", "web", "--port=80"}, ""},
		"run":               {[]string{"run", "x", "--image=nginx"}, "q"},
		"set image":         {[]string{"set", "image", "deploy/web", "a=b"}, ""},
		"create deployment": {[]string{"create", "deployment", "d", "--image=nginx", "--dry-run=client"}, ""},
		"create configmap":  {[]string{"create", "configmap", "c"}, ""},
		"create secret":     {[]string{"create", "secret", "generic", "s"}, ""},
		"create tls":        {[]string{"create", "secret", "tls", "s"}, ""},
		"version":           {[]string{"version"}, ""},
		"events":            {[]string{"events"}, "A"},
		"api-resources":     {[]string{"api-resources"}, ""},
	}
}

// attackLines are lines that must all be refused: every flag that reads a
// file or names a server, on the subcommands that have it, in every
// spelling, at files and servers of the classroom; and every -o that
// reads a template file.
func (c *classroom) attackLines() []string {
	files := []string{
		filepath.Join(c.root, "student-tokens.json"),
		filepath.Join(c.lab, "pki", "ca.key"),
		filepath.Join(c.other, "kubeconfig"),
		"../../../student-tokens.json",
		"../pki/ca.key",
	}
	dirs := []string{filepath.Join(c.lab, "pki"), "../pki", c.root}
	servers := []string{c.server, strings.Replace(c.server, "http://", "https://", 1)}
	all := slices.Sorted(func(yield func(string) bool) {
		for k := range contexts() {
			if !yield(k) {
				return
			}
		}
	})
	type attack struct {
		flag   attackFlag
		values []string
		on     []string
	}
	global := []string{"get", "logs", "patch", "create deployment", "version"}
	attacks := []attack{
		{attackFlag{"kubeconfig", ""}, files, global},
		{attackFlag{"kuberc", ""}, files, global},
		{attackFlag{"certificate-authority", ""}, files, global},
		{attackFlag{"client-certificate", ""}, files, global},
		{attackFlag{"client-key", ""}, files, global},
		{attackFlag{"cache-dir", ""}, dirs, global},
		{attackFlag{"profile-output", ""}, files, global},
		{attackFlag{"server", "s"}, servers, all},
		{attackFlag{"proxy-url", ""}, servers, global},
		{attackFlag{"filename", "f"}, append(slices.Clone(files), dirs...), []string{"get", "describe", "delete", "label", "patch", "wait", "expose", "run", "set image"}},
		{attackFlag{"kustomize", "k"}, dirs, []string{"get", "describe", "delete", "label", "patch", "expose", "run", "set image"}},
		{attackFlag{"from-file", ""}, append(slices.Clone(files), dirs...), []string{"create configmap", "create secret"}},
		{attackFlag{"from-env-file", ""}, files, []string{"create configmap", "create secret"}},
		{attackFlag{"cert", ""}, files, []string{"create tls"}},
		{attackFlag{"key", ""}, files, []string{"create tls"}},
		{attackFlag{"patch-file", ""}, files, []string{"patch"}},
		{attackFlag{"raw", ""}, []string{c.server + "/api", "/api/v1/nodes/n/proxy/", "/api/v1/namespaces/default/pods/p/proxy"}, []string{"get"}},
	}
	ctx := contexts()
	var lines []string
	line := func(words ...string) { lines = append(lines, "kubectl "+strings.Join(words, " ")) }
	for _, a := range attacks {
		for _, on := range a.on {
			cx := ctx[on]
			for _, v := range a.values {
				for _, sp := range spellings(a.flag, v, cx.bool) {
					line(slices.Concat(cx.words, sp)...)
				}
				// Flags may come before the subcommand too.
				line(slices.Concat([]string{"--" + a.flag.long + "=" + v}, cx.words)...)
				if a.flag.short != "" {
					line(slices.Concat([]string{"-" + a.flag.short, v}, cx.words)...)
				}
			}
		}
	}
	// Output formats that read a template file, in every spelling of -o.
	printing := []string{"get", "label", "patch", "expose", "run", "set image", "create deployment", "version", "events", "wait", "api-resources"}
	for _, on := range printing {
		cx := ctx[on]
		for _, format := range []string{"templatefile", "go-template-file", "jsonpath-file", "custom-columns-file", "template-file"} {
			for _, v := range files[:1] {
				for _, o := range [][]string{
					{"-o", format + "=" + v}, {"-o" + format + "=" + v}, {"-o=" + format + "=" + v},
					{"--output", format + "=" + v}, {"--output=" + format + "=" + v}, {"'--output=" + format + "=" + v + "'"},
					{"-o", format, "--template=" + v}, {"--template", v, "-o", format}, {"--output=" + format, "--template", v},
				} {
					line(slices.Concat(cx.words, o)...)
				}
				if cx.bool != "" {
					line(slices.Concat(cx.words, []string{"-" + cx.bool + "o", format + "=" + v})...)
					line(slices.Concat(cx.words, []string{"-" + cx.bool + "o" + format + "=" + v})...)
				}
			}
		}
	}
	// Subcommands that reach files, other servers or containers.
	for _, v := range files {
		line("cp", "web:/x", v)
		line("cp", v, "web:/x")
		line("apply", "-f", v)
		line("replace", "-f", v)
		line("diff", "-f", v)
		line("kustomize", filepath.Dir(v))
		line("create", "-f", v)
		line("create", "--raw", "/api/v1/namespaces", "-f", v)
		line("config", "view", "--raw", "--kubeconfig", v)
		line("kuberc", "view", "--kuberc", v)
		line("auth", "reconcile", "-f", v)
		line("create", "secret", "docker-registry", "x", "--from-file=.dockerconfigjson="+v)
	}
	for _, v := range servers {
		line("proxy", "--api-prefix=/", "--address=127.0.0.1")
		line("port-forward", "svc/web", "0:80")
		line("attach", "web", "-i")
		line("exec", "web", "--", "curl", v)
		line("debug", "node/n", "--image=busybox")
	}
	return lines
}

// sandboxLines are lines the console may well run: the paths in them are
// only values (annotations, inline templates), and relative ones, so even
// a kubectl that read them would look in its own empty directory.
func (c *classroom) sandboxLines() []string {
	var lines []string
	for _, v := range []string{"../../../student-tokens.json", "../pki/ca.key", ".."} {
		lines = append(lines,
			"kubectl get ns -o jsonpath="+v,
			"kubectl get ns -o go-template="+v,
			"kubectl get ns -o custom-columns=X:"+v,
			"kubectl annotate ns default a="+v,
			"kubectl get "+v,
			"kubectl explain "+v,
			"kubectl run x --image=nginx -- cat "+v,
		)
	}
	return lines
}

// TestConsoleCanary runs hundreds of attack lines against a fake kubectl
// that prints every file it is given, in a classroom-shaped data dir: no
// output may contain a secret, no attack line may run, and the canary
// server must see no request.
func TestConsoleCanary(t *testing.T) {
	c := newClassroom(t)
	con := c.console(t)
	ctx := context.Background()
	attacks := c.attackLines()
	ran := 0
	for _, line := range attacks {
		res, err := con.Run(ctx, line)
		var re *RefusedError
		switch {
		case errors.As(err, &re):
			if l := c.leaks(re.Reason.JA + re.Reason.EN); len(l) > 0 {
				t.Errorf("%q: the refusal shows %v", line, l)
			}
		case err != nil:
			t.Errorf("%q: %v", line, err)
		default:
			ran++
			t.Errorf("%q ran: %s", line, res.Output)
			if l := c.leaks(res.Output); len(l) > 0 {
				t.Errorf("%q: LEAKED %v", line, l)
			}
		}
	}
	sandboxed := c.sandboxLines()
	for _, line := range sandboxed {
		res, err := con.Run(ctx, line)
		var re *RefusedError
		switch {
		case errors.As(err, &re):
			if l := c.leaks(re.Reason.JA + re.Reason.EN); len(l) > 0 {
				t.Errorf("%q: the refusal shows %v", line, l)
			}
		case err != nil:
			t.Errorf("%q: %v", line, err)
		default:
			ran++
			if l := c.leaks(res.Output); len(l) > 0 {
				t.Errorf("%q: LEAKED %v", line, l)
			}
			if !strings.Contains(res.Output, sandboxPrefix) {
				t.Errorf("%q: the fake kubectl did not run: %q", line, res.Output)
			}
		}
	}
	if n := c.hits.Load(); n != 0 {
		t.Errorf("the canary server saw %d requests", n)
	}
	if len(attacks) < 500 {
		t.Errorf("only %d attack lines", len(attacks))
	}
	t.Logf("%d attack lines refused, %d sandboxed lines (%d ran the fake kubectl), %d secrets, no leak", len(attacks), len(sandboxed), ran, len(c.secrets))
}

// The canary's fake kubectl does find the secrets when it is given them:
// the canary would see a leak.
func TestCanaryFindsSecrets(t *testing.T) {
	c := newClassroom(t)
	var out strings.Builder
	fakeKubectl(&out, []string{"get", "--kubeconfig=" + filepath.Join(c.other, "kubeconfig"), "-f" + filepath.Join(c.lab, "pki"), c.server})
	if l := c.leaks(out.String()); len(l) < 3 {
		t.Errorf("the fake kubectl found %v in\n%s", l, out.String())
	}
	if c.hits.Load() != 1 {
		t.Errorf("the canary server saw %d requests", c.hits.Load())
	}
}

// kubectl runs in a fresh, empty directory with an empty HOME, both
// outside the data dir and gone afterwards, with only the environment it
// needs.
func TestConsoleSandbox(t *testing.T) {
	c := newClassroom(t)
	con := c.console(t)
	var cwds []string
	for range 2 {
		res, err := con.Run(context.Background(), "kubectl get ns")
		if err != nil {
			t.Fatal(err)
		}
		sb := reportedSandbox(t, res.Output)
		if !slices.Equal(sb.Args, []string{"get", "ns"}) {
			t.Errorf("args %q", sb.Args)
		}
		for _, d := range []string{sb.Cwd, sb.Home} {
			if !strings.HasPrefix(d, con.cfg.TempDir+string(filepath.Separator)) || strings.HasPrefix(d, c.root) {
				t.Errorf("%s is not in the console's temp dir %s", d, con.cfg.TempDir)
			}
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there: %v", d, err)
			}
		}
		if len(sb.CwdEntries) != 0 || len(sb.HomeEntries) != 0 || sb.Cwd == sb.Home {
			t.Errorf("cwd %s %v, home %s %v: want two empty directories", sb.Cwd, sb.CwdEntries, sb.Home, sb.HomeEntries)
		}
		want := []string{"HOME=" + sb.Home, "KUBECONFIG=" + filepath.Join(c.lab, "kubeconfig"), "KUBERC=off", "LANG=C.UTF-8", "PATH="}
		env := slices.Sorted(slices.Values(sb.Env))
		if !slices.Equal(env, want) {
			t.Errorf("env %q, want %q", env, want)
		}
		cwds = append(cwds, sb.Cwd)
	}
	if cwds[0] == cwds[1] {
		t.Errorf("two commands ran in the same directory %s", cwds[0])
	}
	if left := names(con.cfg.TempDir); len(left) != 0 {
		t.Errorf("the console left %v in its temp dir", left)
	}
	if _, err := New(Config{DataDir: c.lab, TempDir: filepath.Join(c.lab, "tmp")}); err == nil {
		t.Error("a TempDir inside the data dir was accepted")
	}
	if _, err := New(Config{DataDir: c.lab, TempDir: c.lab}); err == nil {
		t.Error("the data dir as TempDir was accepted")
	}
}

// TestConsoleInfra: `ccmlab kubectl --infra` runs kubectl with the
// management cluster's kubeconfig and without the flag, in the same
// sandbox.
func TestConsoleInfra(t *testing.T) {
	c := newClassroom(t)
	con := c.console(t)
	res, err := con.Run(context.Background(), "ccmlab kubectl --infra get vmi -A")
	if err != nil {
		t.Fatal(err)
	}
	sb := reportedSandbox(t, res.Output)
	if !slices.Equal(sb.Args, []string{"get", "vmi", "-A"}) {
		t.Errorf("args %q", sb.Args)
	}
	if !slices.Contains(sb.Env, "KUBECONFIG="+filepath.Join(c.lab, InfraKubeconfig)) {
		t.Errorf("env %q: want the infra kubeconfig", sb.Env)
	}
}
