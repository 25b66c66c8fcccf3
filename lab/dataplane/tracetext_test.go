package dataplane

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/dataplane/tracetext"
)

// checkErrorKey: a failed trace names its failure as a tracetext key whose
// English, filled with the trace's arguments, is exactly Error, and whose
// every placeholder has an argument (so the page's language can say it
// all).
func checkErrorKey(t *testing.T, tr Trace) {
	t.Helper()
	if tr.Error == "" {
		if tr.ErrorKey != "" || len(tr.ErrorArgs) > 0 {
			t.Errorf("trace without error has key %q %v", tr.ErrorKey, tr.ErrorArgs)
		}
		return
	}
	text, ok := tracetext.Catalog()[tr.ErrorKey]
	if !ok {
		t.Errorf("error %q has key %q, which tracetext lacks", tr.Error, tr.ErrorKey)
		return
	}
	if got := tracetext.English(i18n.Msg{Key: tr.ErrorKey, Args: tr.ErrorArgs}); got != tr.Error {
		t.Errorf("key %s renders %q, but Error is %q", tr.ErrorKey, got, tr.Error)
	}
	for _, p := range i18n.Placeholders(text.JA) {
		if _, ok := tr.ErrorArgs[p]; !ok {
			t.Errorf("key %s: no argument for {%s} (args %v)", tr.ErrorKey, p, tr.ErrorArgs)
		}
	}
}

// TestFailUsesKeys reads the package's sources: every tr.fail call passes
// a tracetext key (why(tracetext.X, ...)) or a Msg a helper built from one
// (pickTarget's and reach's fail), never a sentence; and every why (or
// reach's no) names a tracetext constant.
func TestFailUsesKeys(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if fn.Sel.Name != "fail" || len(call.Args) != 2 {
					return true
				}
				calls++
				switch a := call.Args[1].(type) {
				case *ast.Ident:
					if a.Name == "fail" {
						return true
					}
				case *ast.CallExpr:
					if id, ok := a.Fun.(*ast.Ident); ok && id.Name == "why" {
						return true
					}
				}
				t.Errorf("%s: fail is given %T, not why(tracetext.X, ...) or a helper's fail", fset.Position(call.Pos()), call.Args[1])
			case *ast.Ident:
				// why builds the Msg; reach's no forwards its key to why.
				if (fn.Name != "why" && fn.Name != "no") || len(call.Args) == 0 {
					return true
				}
				if id, ok := call.Args[0].(*ast.Ident); ok && id.Name == "key" {
					return true // the forwarding helper itself
				}
				sel, ok := call.Args[0].(*ast.SelectorExpr)
				if !ok {
					t.Errorf("%s: %s is given a key that is not a tracetext constant", fset.Position(call.Pos()), fn.Name)
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "tracetext" {
					t.Errorf("%s: %s is given a key that is not a tracetext constant", fset.Position(call.Pos()), fn.Name)
				}
			}
			return true
		})
	}
	if calls < 10 {
		t.Errorf("found only %d fail calls; is the scan still looking at the right thing?", calls)
	}
}

// TestFailureKeysInJapanese routes a few failures without a control plane
// and renders their keys in Japanese: the page gets a Japanese sentence
// with every argument filled.
func TestFailureKeysInJapanese(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.ServiceExternalTrafficPolicy
		slices bool // the Service's endpoints: web-b, ready
		key    string
		has    []string
	}{
		{"Cluster, no endpoints", cluster, false, tracetext.NoEndpoints, []string{"default/web", "kube-proxy"}},
		{"Local, endpoint only on another node", local, true, tracetext.ExternalLocalDrop, []string{nodeA, "default/web", "externalTrafficPolicy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorld(tc.policy)
			if tc.slices {
				w.objs.slices = []*discoveryv1.EndpointSlice{testSlice("web-1", ep{w.podByName("web-b"), "ready"})}
			}
			tr, err := w.dataplane(t).Do(t.Context(), Request{Kind: KindNodePort, Node: nodeA, Port: 30080})
			if err != nil {
				t.Fatal(err)
			}
			if tr.ErrorKey != tc.key {
				t.Fatalf("errorKey = %q (error %q), want %q", tr.ErrorKey, tr.Error, tc.key)
			}
			checkErrorKey(t, tr)
			ja := tracetext.Catalog().Text(i18n.Msg{Key: tr.ErrorKey, Args: tr.ErrorArgs}).JA
			if strings.Contains(ja, "{") || !strings.ContainsAny(ja, "はがをに") {
				t.Errorf("Japanese text %q is not a filled Japanese sentence", ja)
			}
			for _, h := range tc.has {
				if !strings.Contains(ja, h) {
					t.Errorf("Japanese text %q lacks %q", ja, h)
				}
			}
		})
	}
}
