package console

import (
	"slices"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/exercises/format"
)

// Lines of every test here and of the exercises, as words after kubectl.
func testLines(t *testing.T) [][]string {
	t.Helper()
	c := &classroom{root: "/r", lab: "/r/students/alice", other: "/r/students/bob", server: "http://127.0.0.1:1"}
	lines := append(c.attackLines(), c.sandboxLines()...)
	lines = append(lines, exerciseLines(t)...)
	lines = append(lines,
		"kubectl -n get pods", "kubectl --help get pods", "kubectl get -- create", "kubectl -v 3 create deploy x",
		"kubectl --dry-run create", "kubectl create --dry-run svc", "kubectl logs -ps x y", "kubectl --namespace", "kubectl -n",
		"kubectl create service -n x loadbalancer web", "kubectl rollout -l a=b status x", "kubectl get --raw x create")
	var out [][]string
	for _, l := range lines {
		words, err := splitLine(l)
		if err != nil || len(words) == 0 || words[0] != "kubectl" {
			continue
		}
		out = append(out, words[1:])
	}
	return out
}

// find walks the tree exactly as cobra's Command.Find walks kubectl's.
func TestFindIsCobras(t *testing.T) {
	root := kubectlTree()
	tree := treeOf(root)
	for _, args := range testLines(t) {
		want, wantRest, _ := root.Find(slices.Clone(args))
		got, gotRest := tree.find(slices.Clone(args))
		wantPath := strings.TrimPrefix(strings.TrimPrefix(want.CommandPath(), "kubectl"), " ")
		if got.path != wantPath || !slices.Equal(gotRest, wantRest) {
			t.Errorf("%q: console finds %q %q, cobra %q %q", args, got.path, gotRest, wantPath, wantRest)
		}
	}
}

// Every subcommand and flag the policy names exists in kubectl's tree, so
// a renamed one is noticed.
func TestAllowlistMatchesTree(t *testing.T) {
	tree := theTree()
	byPath := map[string]*command{}
	tree.walk(func(c *command) { byPath[c.path] = c })
	has := func(c *command, name string) bool {
		return slices.ContainsFunc(c.flags, func(f flagSpec) bool { return f.name == name }) || c.help != nil && c.help.name == name
	}
	for _, f := range globalFlags() {
		if !has(tree, f) {
			t.Errorf("global flag --%s is not kubectl's", f)
		}
	}
	for path, flags := range allowedCommands() {
		c, ok := byPath[path]
		if !ok {
			t.Errorf("kubectl %s does not exist", path)
			continue
		}
		if c.ownParsing {
			t.Errorf("kubectl %s parses its own flags", path)
		}
		for _, f := range flags {
			if !has(c, f) {
				t.Errorf("kubectl %s has no --%s", path, f)
			}
		}
	}
	for path := range commandReasons() {
		if _, ok := byPath[path]; !ok {
			t.Errorf("the reason for kubectl %s names no command", path)
		}
	}
}

// Every flag of every subcommand that is not on its allowlist is refused,
// in its long and its short spelling, so a flag a kubectl upgrade adds is
// refused until it is allowlisted. Every subcommand not on the allowlist
// is refused.
func TestUnlistedIsRefused(t *testing.T) {
	tree := theTree()
	commands := allowedCommands()
	n := 0
	tree.walk(func(c *command) {
		if c.path == "" {
			return
		}
		allowed, listed := commands[c.path]
		isGroup := false
		for p := range commands {
			isGroup = isGroup || strings.HasPrefix(p, c.path+" ")
		}
		if !listed && !isGroup {
			n++
			if _, err := Parse("kubectl " + c.path + " x"); err == nil {
				t.Errorf("kubectl %s is accepted", c.path)
			}
			return
		}
		ok := append(slices.Clone(allowed), globalFlags()...)
		for _, f := range c.flags {
			if slices.Contains(ok, f.name) {
				continue
			}
			for _, spelled := range []string{"--" + f.name + "=x", "-" + f.shorthand + "x"} {
				if spelled == "-x" {
					continue
				}
				n++
				if args, err := Parse("kubectl " + c.path + " " + spelled); err == nil {
					t.Errorf("kubectl %s %s is accepted as %q", c.path, spelled, args)
				}
			}
		}
	})
	t.Logf("%d unlisted flags and subcommands refused", n)
}

// exerciseLines are the kubectl lines the exercises suggest and solve
// with (exercises/format/defs).
func exerciseLines(t *testing.T) []string {
	t.Helper()
	all, err := format.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ex := range all {
		for _, st := range ex.Steps {
			lines = append(lines, st.Commands...)
			for _, s := range st.Solution {
				if s.Cmd != "" {
					lines = append(lines, s.Cmd)
				}
			}
		}
	}
	return lines
}

// Every kubectl line of the exercises runs in the console, but the ones
// that need a shell (a pipe, ;) which the exercises mark as such.
func TestConsoleAcceptsExerciseLines(t *testing.T) {
	n := 0
	for _, line := range exerciseLines(t) {
		if !strings.HasPrefix(line, "kubectl ") {
			continue
		}
		_, err := Parse(line)
		if strings.ContainsAny(line, "|;") {
			if err == nil {
				t.Errorf("%q (a shell line) is accepted", line)
			}
			continue
		}
		n++
		if err != nil {
			t.Errorf("%q is refused: %v", line, err)
		}
	}
	if n < 50 {
		t.Errorf("only %d exercise lines", n)
	}
	t.Logf("%d exercise lines accepted", n)
}
