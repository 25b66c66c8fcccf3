package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pkgImports maps every package of the module that has non-test Go files
// (module-relative path) to the module packages those files import.
func pkgImports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two levels up: %v", err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if r, ok := strings.CutPrefix(p, Module+"/"); ok {
				out[rel] = append(out[rel], r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayering(t *testing.T) {
	pkgs := pkgImports(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages; is the walk looking at the module?", len(pkgs))
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		from := LayerOf(p)
		if from < 0 {
			t.Errorf("package %s is in no layer: add it to Layers in internal/layers/layers.go, at the layer its imports put it", p)
			continue
		}
		for _, imp := range pkgs[p] {
			to := LayerOf(imp)
			if to < 0 {
				continue // reported as a package of its own
			}
			if to > from {
				t.Errorf("%s (layer %v) imports %s (layer %v), which is above it", p, Layers[from], imp, Layers[to])
			}
			for scope, banned := range Forbidden {
				if ok, _ := Match(scope, p); !ok {
					continue
				}
				for _, b := range banned {
					if ok, _ := Match(b, imp); ok {
						t.Errorf("%s imports %s: no package in %s may import %s", p, imp, scope, b)
					}
				}
			}
		}
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, rel string
		want         bool
	}{
		{"lab/...", "lab", true},
		{"lab/...", "lab/cloud", true},
		{"lab/...", "labs/cloud", false},
		{"server", "server", true},
		{"server", "server/hub", false},
		{"app/...", "app/sim", true},
	} {
		t.Run(tc.pattern+" "+tc.rel, func(t *testing.T) {
			if got, _ := Match(tc.pattern, tc.rel); got != tc.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
			}
		})
	}
	// The longest pattern wins: app/sim sits below exercises, app above.
	if s, a := LayerOf("app/sim"), LayerOf("app"); s >= a || s >= LayerOf("exercises") {
		t.Errorf("app/sim in layer %d, app in %d, exercises in %d", s, a, LayerOf("exercises"))
	}
	if LayerOf("nowhere") != -1 {
		t.Error("an unknown package has a layer")
	}
}

// TestLeavesAndReach: the leaves import only what Leaves allows, and no
// package reaches what Unreachable keeps from it, through any chain of
// imports (go list -deps ./classroom then holds no lab package, no
// kubectl).
func TestLeavesAndReach(t *testing.T) {
	pkgs := pkgImports(t)
	for leaf, allowed := range Leaves {
		t.Run("leaf "+leaf, func(t *testing.T) {
			if _, ok := pkgs[leaf]; !ok {
				t.Fatalf("no package %s", leaf)
			}
			for _, imp := range pkgs[leaf] {
				if !slices.Contains(allowed, imp) {
					t.Errorf("%s imports %s; a leaf may import only %v", leaf, imp, allowed)
				}
			}
		})
	}
	for scope, banned := range Unreachable {
		t.Run("reach "+scope, func(t *testing.T) {
			for p := range pkgs {
				if ok, _ := Match(scope, p); !ok {
					continue
				}
				// Breadth first, keeping the chain that led to each package.
				via := map[string]string{p: ""}
				queue := []string{p}
				for len(queue) > 0 {
					cur := queue[0]
					queue = queue[1:]
					for _, imp := range pkgs[cur] {
						if _, seen := via[imp]; seen {
							continue
						}
						via[imp] = cur
						queue = append(queue, imp)
						for _, b := range banned {
							if ok, _ := Match(b, imp); ok {
								chain := []string{imp}
								for c := cur; c != ""; c = via[c] {
									chain = append([]string{c}, chain...)
								}
								t.Errorf("%s reaches %s: %s", p, imp, strings.Join(chain, " -> "))
							}
						}
					}
				}
			}
		})
	}
}
