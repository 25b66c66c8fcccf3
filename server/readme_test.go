package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

// curlRE finds a curl command in README.md: in a code block or in
// backticks, up to a comment, a closing backtick or the end of the line.
var curlRE = regexp.MustCompile("(?m)(?:^|`)\\s*(curl [^`#\\n]*)")

// shellWords splits a command line as sh would for the quoting README
// uses (single and double quotes, no expansions).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case ch == '\\' || ch == '$' || ch == '|' || ch == ';' || ch == '&':
			t.Fatalf("README's curl %q uses shell syntax this test does not read", s)
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// curlRequest builds the request curl would send for args, aimed at base
// instead of the README's host: -X, -H, -d as curl reads them (-d without
// -H sends application/x-www-form-urlencoded and POST), -o ignored.
func curlRequest(t *testing.T, base string, args []string) *http.Request {
	t.Helper()
	method, target, data, hasData := "", "", "", false
	hdr := http.Header{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		next := func() string {
			i++
			if i >= len(args) {
				t.Fatalf("%s needs a value in %q", a, args)
			}
			return args[i]
		}
		switch {
		case a == "-X" || a == "--request":
			method = next()
		case strings.HasPrefix(a, "-X"):
			method = a[2:]
		case a == "-H" || a == "--header":
			k, v, ok := strings.Cut(next(), ":")
			if !ok {
				t.Fatalf("header without a colon in %q", args)
			}
			hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "-d" || a == "--data" || a == "--data-raw":
			data, hasData = next(), true
		case a == "-o" || a == "--output":
			next()
		case a == "-s" || a == "-sS" || a == "-f" || a == "-i":
		case strings.HasPrefix(a, "-"):
			t.Fatalf("curl option %s in %q: teach this test to read it", a, args)
		default:
			target = a
		}
	}
	if target == "" {
		t.Fatalf("no URL in %q", args)
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	if method == "" {
		method = http.MethodGet
		if hasData {
			method = http.MethodPost
		}
	}
	var body io.Reader
	if hasData {
		body = strings.NewReader(data)
		if hdr.Get("Content-Type") == "" {
			hdr.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	r, err := http.NewRequest(method, base+u.RequestURI(), body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header[k] = v
	}
	return r
}

// TestReadmeCurlExamples runs every curl command of README.md against a
// lab: a student who copies one gets a 2xx.
func TestReadmeCurlExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, m := range curlRE.FindAllStringSubmatch(string(readme), -1) {
		cmds = append(cmds, strings.TrimSpace(m[1]))
	}
	if len(cmds) < 2 {
		t.Fatalf("found %d curl commands in README.md: %q", len(cmds), cmds)
	}
	l := newCheapLab(t, "")
	srv := httptest.NewServer(l.srv)
	t.Cleanup(srv.Close)
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			r := curlRequest(t, srv.URL, shellWords(t, cmd))
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode/100 != 2 {
				t.Fatalf("%s %s = %d %s", r.Method, r.URL, res.StatusCode, b)
			}
		})
	}
}
