package testutil

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// BuildCCMLab builds the ccmlab binary into a new temporary directory, for
// tests that run the real program (as a user or the classroom would), and
// returns its path and a cleanup that removes the directory. It is called
// from TestMain, once per package: the build links all of Kubernetes.
func BuildCCMLab() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "ccmlab-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "ccmlab")
	build := BuildCommand(path)
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building ccmlab: %v\n%s", err, out)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// BuildCommand is the go build that makes the test binary at path. It
// leaves out the symbol table and DWARF (-s -w): the program is the same,
// panics still print file and line (from pclntab), and the binary is a
// third smaller; a suite builds it in several packages at once and a full
// disk fails them all.
func BuildCommand(path string) *exec.Cmd {
	return exec.Command("go", "build", "-ldflags=-s -w", "-o", path, "github.com/ccmlab/ccmlab/cmd/ccmlab")
}

// StringConstants returns the values of the string constants declared in
// the Go file at path: a catalog's tests use it to prove that every key
// constant has texts and every text a constant.
func StringConstants(path string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	consts := map[string]bool{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					consts[s] = true
				}
			}
		}
	}
	return consts, nil
}
