package layers

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// labHarnesses are the test helpers that bring up a control plane or a
// whole lab. A test file that imports one is an integration test: it must
// carry `//go:build !unit`, so that `make test-unit` (-tags=unit) neither
// compiles nor links it. Linking a test binary with kube-apiserver in it
// costs about 10 s on 2 cores; without the tag the fast tier pays that for
// every package that has one such file, and stops being fast.
var labHarnesses = []string{
	Module + "/app",
	Module + "/app/apptest",
	Module + "/app/sim",
	Module + "/lab/controlplane/cptest",
}

func TestIntegrationTestFilesStayOutOfTheUnitTier(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	allTags := func(string) bool { return true }
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		// cmd/ccmlab and web/e2e are left out of the unit tier whole.
		if strings.HasPrefix(rel, "cmd/ccmlab/") || strings.HasPrefix(rel, "web/e2e/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		var harness string
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, h := range labHarnesses {
				if p == h {
					harness = p
				}
			}
		}
		if harness == "" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		excluded := false
		for _, line := range strings.Split(string(src), "\n") {
			if !constraint.IsGoBuild(line) {
				if strings.HasPrefix(line, "package ") {
					break
				}
				continue
			}
			expr, err := constraint.Parse(line)
			if err != nil {
				return err
			}
			// Does the file drop out of a -tags=unit build whatever else
			// is set? Only if its constraint is false with every tag true.
			excluded = !expr.Eval(allTags)
		}
		if !excluded {
			t.Errorf("%s imports %s but is built with -tags=unit: add `//go:build !unit` as its first line", rel, harness)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
