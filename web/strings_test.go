package web

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
	"github.com/ccmlab/ccmlab/lab/flow/flowtext"
)

// TestCatalogComplete: every key has both languages, and both fill the same
// placeholders; the flow's and the data plane's keys included.
func TestCatalogComplete(t *testing.T) {
	if err := catalog.Check(); err != nil {
		t.Error(err)
	}
	for _, k := range flowtext.Catalog().Keys() {
		if _, ok := catalog[k]; !ok {
			t.Errorf("the page lacks the flow's key %q", k)
		}
	}
	for _, k := range tracetext.Catalog().Keys() {
		if _, ok := catalog[k]; !ok {
			t.Errorf("the page lacks the data plane's key %q", k)
		}
	}
}

var (
	jsKey    = regexp.MustCompile(`\bt\(\s*"([A-Za-z0-9_.\-]+)"\s*[,)]`)
	templKey = regexp.MustCompile(`\.T\("([A-Za-z0-9_.\-]+)"\)`)
)

// sources returns the page's own sources: the templ file and the JS.
func sources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, _ := filepath.Glob("static/js/*.js")
	files = append(files, "page.templ")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// TestKeysUsedExist: every literal key the page asks for is in the catalog.
func TestKeysUsedExist(t *testing.T) {
	for file, src := range sources(t) {
		re := jsKey
		if strings.HasSuffix(file, ".templ") {
			re = templKey
		}
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			if _, ok := catalog[m[1]]; !ok {
				t.Errorf("%s uses %q, which the catalog lacks", file, m[1])
			}
		}
	}
}

// dynamicFamilies are the key prefixes the JS builds at run time from data
// ("step." + key); TestFlowVocabularyTranslated covers them.
var dynamicFamilies = []string{"ctrl.", "dep.", "step.", "nodestep.", "reason.", "symptom.", "hop.", "health.", "status.", "dg.", "action.", "lang."}

// TestNoUnusedKeys keeps the catalog tidy: a key nobody uses is dead text
// that translators would still maintain.
func TestNoUnusedKeys(t *testing.T) {
	all := strings.Join(func() []string {
		var v []string
		for _, s := range sources(t) {
			v = append(v, s)
		}
		return v
	}(), "\n")
	sentKeys, err := i18n.Merge(flowtext.Catalog(), tracetext.Catalog())
	if err != nil {
		t.Fatal(err)
	}
keys:
	for _, k := range Keys() {
		if _, sent := sentKeys[k]; sent || strings.Contains(all, `"`+k+`"`) {
			continue // the lab sends the flow's and the data plane's keys
		}
		for _, p := range dynamicFamilies {
			if strings.HasPrefix(k, p) {
				continue keys
			}
		}
		t.Errorf("catalog key %q is not used by the page", k)
	}
}

// constStrings reads the string constants (and string slice variables) of
// a package's source without compiling it, so this test does not link
// Kubernetes.
func constStrings(t *testing.T, dir string, match func(name string) bool) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]string{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !match(name.Name) || i >= len(vs.Values) {
						continue
					}
					out[name.Name] = append(out[name.Name], stringsIn(vs.Values[i])...)
				}
			}
		}
	}
	return out
}

func stringsIn(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

func need(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := catalog[k]; !ok {
			t.Errorf("the catalog lacks %q", k)
		}
	}
}

// TestFlowVocabularyTranslated: every step key, stuck reason, controller,
// hop kind and health state the lab can send has words on the page.
func TestFlowVocabularyTranslated(t *testing.T) {
	flowDir := filepath.Join("..", "lab", "flow")
	steps := constStrings(t, flowDir, func(n string) bool { return n == "serviceStepKeys" || n == "nodeStepKeys" })
	if len(steps["serviceStepKeys"]) != 6 || len(steps["nodeStepKeys"]) != 6 {
		t.Fatalf("could not read the step keys from lab/flow: %v", steps)
	}
	for _, k := range steps["serviceStepKeys"] {
		need(t, "step."+k, "step."+k+".desc")
	}
	for _, k := range steps["nodeStepKeys"] {
		need(t, "nodestep."+k, "nodestep."+k+".desc")
	}
	reasons := constStrings(t, flowDir, func(n string) bool { return strings.HasPrefix(n, "Reason") })
	if len(reasons) < 7 {
		t.Fatalf("found only %d reason codes in lab/flow", len(reasons))
	}
	for _, v := range reasons {
		need(t, "reason."+v[0])
		need(t, "symptom."+v[0]) // the same reason during the diagnosis challenge
	}
	// The step statuses are wire types of the stream (internal/labapi);
	// lab/flow names them by aliases.
	status := constStrings(t, filepath.Join("..", "internal", "labapi"), func(n string) bool { return strings.HasPrefix(n, "Step") && n != "StepStatus" })
	if len(status) != 4 {
		t.Fatalf("could not read the step statuses from internal/labapi: %v", status)
	}
	for n, v := range status {
		if len(v) != 1 {
			t.Fatalf("step status %s is not one string: %v", n, v)
		}
		need(t, "status."+v[0])
	}

	ctrls := constStrings(t, filepath.Join("..", "lab", "profile"), func(n string) bool {
		return n == "Node" || n == "NodeLifecycle" || n == "Route" || n == "Service"
	})
	if len(ctrls) != 4 {
		t.Fatalf("could not read the controller names from lab/profile: %v", ctrls)
	}
	shortcut := map[string]string{"node": "key.node", "nodelifecycle": "key.lifecycle", "route": "key.route", "service": "key.service"}
	for _, v := range ctrls {
		need(t, "ctrl."+v[0], "ctrl."+v[0]+".desc", "dep."+v[0], shortcut[v[0]])
	}
	need(t, "ctrl.lbc", "ctrl.lbc.desc", "dep.lbc")

	hops := constStrings(t, filepath.Join("..", "lab", "dataplane"), func(n string) bool { return strings.HasPrefix(n, "Hop") })
	if len(hops) < 7 {
		t.Fatalf("found only %d hop kinds in lab/dataplane", len(hops))
	}
	for _, v := range hops {
		need(t, "hop."+v[0])
	}
	health := constStrings(t, filepath.Join("..", "lab", "cloud"), func(n string) bool {
		return n == "TargetInitial" || n == "TargetHealthy" || n == "TargetUnhealthy" || n == "TargetUnused"
	})
	if len(health) != 4 {
		t.Fatalf("could not read the target health states from lab/cloud: %v", health)
	}
	for _, v := range health {
		need(t, "health."+v[0])
	}

	for _, op := range []string{"stop", "start", "terminate"} {
		need(t, "action."+op, "action."+op+".label")
	}
	for _, k := range []string{"service", "controller", "lb", "targets", "status"} { // diagram.js CONTROL_KEYS
		need(t, "dg."+k)
	}
	for _, l := range Langs() {
		need(t, "lang."+string(l))
	}
}

// TestModulesListed: the page preloads exactly the modules app.js imports.
func TestModulesListed(t *testing.T) {
	files, _ := filepath.Glob("static/js/*.js")
	var have []string
	for _, f := range files {
		if name := "js/" + filepath.Base(f); name != "js/app.js" {
			have = append(have, name)
		}
	}
	want := slices.Clone(jsModules)
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("jsModules = %v, static/js has %v", want, have)
	}
}

var (
	stringsScript = regexp.MustCompile(`<script type="application/json" id="ccmlab-strings">(.*?)</script>`)
)

// TestJapanesePageFlowEvidence reads the strings the Japanese page really
// ships and proves that every evidence and stuck detail the lab can send
// is a Japanese sentence: Japanese script in it, and no English phrase
// besides the names in placeholders and keptNames. It also checks that the
// JS renders the keys rather than the English fallback.
func TestJapanesePageFlowEvidence(t *testing.T) {
	keys := flowtext.Catalog().Keys()
	if len(keys) < 20 {
		t.Fatalf("only %d flow keys", len(keys))
	}
	checkShippedJapanese(t, keys)
	src := sources(t)
	for _, want := range []string{"step.evidenceKey", "stuck.messageKey"} {
		if !strings.Contains(src["static/js/flow.js"], want) {
			t.Errorf("flow.js does not render %s", want)
		}
	}
}

// TestJapanesePageTraceErrors is the same for why a traced request failed
// (lab/dataplane's tracetext keys), which the diagram and the flow's
// request panel show.
func TestJapanesePageTraceErrors(t *testing.T) {
	keys := tracetext.Catalog().Keys()
	if len(keys) < 10 {
		t.Fatalf("only %d trace failure keys", len(keys))
	}
	checkShippedJapanese(t, keys)
	src := sources(t)
	for _, file := range []string{"static/js/diagram.js", "static/js/flow.js"} {
		if !strings.Contains(src[file], "traceError(") {
			t.Errorf("%s does not render a trace's errorKey (traceError)", file)
		}
	}
	if !strings.Contains(src["static/js/util.js"], "errorKey") {
		t.Error("util.js's traceError does not read errorKey")
	}
}

// checkShippedJapanese reads the strings the Japanese page ships and fails
// for any of keys that is missing or not a Japanese sentence.
func checkShippedJapanese(t *testing.T, keys []string) {
	t.Helper()
	res := get(t, newHandler(t, Config{}), "/?lang=ja", nil)
	body, _ := io.ReadAll(res.Body)
	m := stringsScript.FindSubmatch(body)
	if m == nil {
		t.Fatal("the page has no ccmlab-strings script")
	}
	var shipped map[string]string
	if err := json.Unmarshal(m[1], &shipped); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ja, ok := shipped[k]
		if !ok {
			t.Errorf("the Japanese page lacks %q", k)
			continue
		}
		if why := i18n.NotJapanese(ja); why != "" {
			t.Errorf("%s: %q: %s", k, ja, why)
		}
	}
}
