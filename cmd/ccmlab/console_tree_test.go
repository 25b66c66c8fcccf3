package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ccmlab/ccmlab/exercises/console"
)

// The console reads lines with the same command tree and flag definitions
// as the kubectl this binary embeds, both as newKubectlCommand builds it
// and as it hangs below ccmlab's root command (where it runs). If a
// kubectl upgrade or a change to kubectl.go makes them differ, this fails
// and the console's copy (exercises/console/tree.go) must follow.
func TestConsoleTreeIsEmbeddedKubectls(t *testing.T) {
	want := console.Tree()
	root := newRootCommand(io.Discard, io.Discard)
	var under *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "kubectl" {
			under = c
		}
	}
	if under == nil {
		t.Fatal("ccmlab has no kubectl subcommand")
	}
	for name, got := range map[string][]string{
		"newKubectlCommand": withoutInfra(t, console.TreeOf(newKubectlCommand())),
		"ccmlab kubectl":    withoutInfra(t, console.TreeOf(under)),
	} {
		if slices.Equal(got, want) {
			continue
		}
		for _, l := range got {
			if !slices.Contains(want, l) {
				t.Errorf("%s has, the console lacks: %s", name, l)
			}
		}
		for _, l := range want {
			if !slices.Contains(got, l) {
				t.Errorf("the console has, %s lacks: %s", name, l)
			}
		}
	}
}

// withoutInfra drops ccmlab's own --infra flag, which every command of the
// embedded kubectl inherits: the console reads it before parsing, only as
// the line's first word after "ccmlab kubectl", and then runs reading
// commands only (console.InfraFlag), so its tree has no such flag. It
// fails unless every command has it, so that nothing else is dropped.
func withoutInfra(t *testing.T, tree []string) []string {
	t.Helper()
	commands, infra := 0, 0
	var out []string
	for _, l := range tree {
		switch {
		case strings.Contains(l, "\taliases="):
			commands++
		case strings.HasSuffix(l, "\t--infra - bool noopt=\"true\"") || strings.Contains(l, "\t--infra - bool noopt=\"true\""):
			infra++
			continue
		}
		out = append(out, l)
	}
	if infra != commands {
		t.Errorf("--infra on %d of %d commands", infra, commands)
	}
	return out
}
