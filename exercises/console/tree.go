package console

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/logs"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// command is one node of kubectl's command tree as the console reads a
// line: its names and every flag a line may set on it (its own and the
// ones it inherits), as pflag defines them. It is plain data taken from
// kubectl's own cobra tree once, so parsing a line never touches that tree
// or the variables its flags are bound to (klog's verbosity, kubectl's
// profiling globals): each Parse builds a fresh pflag.FlagSet from these
// specs and parses into it.
type command struct {
	name     string
	aliases  []string
	path     string // "create secret tls"; "" for kubectl itself
	children []*command
	// flags is the command's merged flag set before cobra runs it: local,
	// persistent and inherited flags. cobra's Find strips flags with it.
	flags []flagSpec
	// help is cobra's -h/--help, added only to the command that runs.
	help      *flagSpec
	normalize func(*pflag.FlagSet, string) pflag.NormalizedName
	// ownParsing is cobra's DisableFlagParsing: the command reads its own
	// flags, so the console cannot know what they mean.
	ownParsing bool
}

// flagSpec is what decides how pflag reads a flag: its names and whether
// it takes a value (NoOptDefVal empty) or not.
type flagSpec struct {
	name, shorthand, noOptDefVal, typ string
}

// kubectlTree builds kubectl's command tree the way the ccmlab binary
// embeds it (cmd/ccmlab/kubectl.go: NewKubectlCommand with the default
// config flags, plus component-base's logging flags), with discarded
// streams. Nothing runs: only the definitions are read.
func kubectlTree() *cobra.Command {
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true).WithWarningPrinter(streams),
		IOStreams:   streams,
	})
	logs.AddFlags(cmd.PersistentFlags())
	return cmd
}

// theTree is the console's copy of kubectl's tree, taken once: building
// kubectl's commands costs tens of milliseconds, and the copy never
// changes afterwards (only read, from any goroutine).
var theTree = sync.OnceValue(func() *command { return treeOf(kubectlTree()) })

// treeOf copies a cobra tree into command specs; root is kubectl (it may
// hang below another command, as in the ccmlab binary).
func treeOf(root *cobra.Command) *command {
	return copyCommand(root, "", true)
}

func copyCommand(c *cobra.Command, parent string, root bool) *command {
	path := ""
	switch {
	case root:
	case parent == "":
		path = c.Name()
	default:
		path = parent + " " + c.Name()
	}
	// InheritedFlags merges the parents' persistent flags into c.Flags(),
	// as cobra's Find and execute do before they read c.Flags().
	c.InheritedFlags()
	fs := c.Flags()
	n := &command{
		name: c.Name(), aliases: slices.Clone(c.Aliases), path: path,
		normalize: fs.GetNormalizeFunc(), ownParsing: c.DisableFlagParsing,
	}
	fs.VisitAll(func(f *pflag.Flag) { n.flags = append(n.flags, specOf(f)) })
	// cobra's InitDefaultHelpFlag, which runs on the command found.
	if fs.Lookup("help") == nil {
		h := flagSpec{name: "help", noOptDefVal: "true", typ: "bool"}
		if fs.ShorthandLookup("h") == nil {
			h.shorthand = "h"
		}
		n.help = &h
	}
	for _, sub := range c.Commands() {
		n.children = append(n.children, copyCommand(sub, path, false))
	}
	return n
}

func specOf(f *pflag.Flag) flagSpec {
	return flagSpec{name: f.Name, shorthand: f.Shorthand, noOptDefVal: f.NoOptDefVal, typ: f.Value.Type()}
}

// recorded is the Value of every flag in a parse: it keeps what the line
// set, bound to nothing else.
type recorded struct {
	typ    string
	values []string
}

func (r *recorded) String() string {
	if len(r.values) == 0 {
		return ""
	}
	return r.values[len(r.values)-1]
}

func (r *recorded) Set(v string) error { r.values = append(r.values, v); return nil }
func (r *recorded) Type() string       { return r.typ }

// flagSet builds a fresh pflag set with the command's flags (and the help
// flag when withHelp), each recording into its own value.
func (n *command) flagSet(withHelp bool) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl "+n.path, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	// Set before the flags are added: pflag normalizes names as it adds.
	fs.SetNormalizeFunc(n.normalize)
	add := func(s flagSpec) {
		fs.AddFlag(&pflag.Flag{Name: s.name, Shorthand: s.shorthand, NoOptDefVal: s.noOptDefVal, Value: &recorded{typ: s.typ}})
	}
	for _, s := range n.flags {
		add(s)
	}
	if withHelp && n.help != nil {
		add(*n.help)
	}
	return fs
}

// child is cobra's findNext (prefix matching and case folding are off in
// kubectl and ccmlab).
func (n *command) child(name string) *command {
	for _, c := range n.children {
		if c.name == name || slices.Contains(c.aliases, name) {
			return c
		}
	}
	return nil
}

// find is cobra's Command.Find: it walks down the tree by the first word
// that is neither a flag nor a flag's value, where whether a word is a
// flag's value is decided cobra's way (stripFlags, argsMinusFirstX), not
// pflag's. It returns the command and the line without the command's
// names. TestFindIsCobras holds it to cobra's own on kubectl's tree.
func (n *command) find(args []string) (*command, []string) {
	cur := n
	for {
		fs := cur.flagSet(false)
		words := stripFlags(args, fs)
		if len(words) == 0 {
			return cur, args
		}
		next := cur.child(words[0])
		if next == nil {
			return cur, args
		}
		args = argsMinusFirst(args, words[0], fs)
		cur = next
	}
}

func hasNoOptDefVal(name string, fs *pflag.FlagSet) bool {
	f := fs.Lookup(name)
	return f != nil && f.NoOptDefVal != ""
}

func shortHasNoOptDefVal(name string, fs *pflag.FlagSet) bool {
	if name == "" {
		return false
	}
	f := fs.ShorthandLookup(name[:1])
	return f != nil && f.NoOptDefVal != ""
}

// takesNext is cobra's test for "this word is a flag whose value is the
// next word".
func takesNext(s string, fs *pflag.FlagSet) bool {
	if strings.Contains(s, "=") {
		return false
	}
	if strings.HasPrefix(s, "--") {
		return !hasNoOptDefVal(s[2:], fs)
	}
	return strings.HasPrefix(s, "-") && len(s) == 2 && !shortHasNoOptDefVal(s[1:], fs)
}

// stripFlags is cobra's stripFlags: the words that may name subcommands.
func stripFlags(args []string, fs *pflag.FlagSet) []string {
	var words []string
	for len(args) > 0 {
		s := args[0]
		args = args[1:]
		switch {
		case s == "--":
			return words
		case takesNext(s, fs):
			if len(args) <= 1 {
				return words
			}
			args = args[1:]
		case s != "" && !strings.HasPrefix(s, "-"):
			words = append(words, s)
		}
	}
	return words
}

// argsMinusFirst is cobra's argsMinusFirstX: args without the first word
// x that is not a flag's value.
func argsMinusFirst(args []string, x string, fs *pflag.FlagSet) []string {
	for pos := 0; pos < len(args); pos++ {
		s := args[pos]
		switch {
		case s == "--":
			return args
		case takesNext(s, fs):
			pos++
		case !strings.HasPrefix(s, "-"):
			if s == x {
				return slices.Concat(args[:pos], args[pos+1:])
			}
		}
	}
	return args
}

// walk visits n and every command below it.
func (n *command) walk(visit func(*command)) {
	visit(n)
	for _, c := range n.children {
		c.walk(visit)
	}
}

// describe lists the tree one line per command and flag, the way it
// decides how a line is read, for comparing two trees.
func (n *command) describe() []string {
	var out []string
	n.walk(func(c *command) {
		name := "kubectl"
		if c.path != "" {
			name += " " + c.path
		}
		norm := "-"
		if c.normalize != nil {
			norm = string(c.normalize(nil, "a_b.c"))
		}
		out = append(out, fmt.Sprintf("%s\taliases=%s ownParsing=%v normalize(a_b.c)=%s", name, strings.Join(c.aliases, ","), c.ownParsing, norm))
		specs := slices.Clone(c.flags)
		if c.help != nil {
			specs = append(specs, *c.help)
		}
		for _, f := range specs {
			out = append(out, fmt.Sprintf("%s\t--%s -%s %s noopt=%q", name, f.name, f.shorthand, f.typ, f.noOptDefVal))
		}
	})
	slices.Sort(out)
	return out
}

// Tree describes the command tree the console parses lines with: one line
// per command and per flag (names, shorthand, type and whether it takes a
// value), sorted.
func Tree() []string { return theTree().describe() }

// TreeOf describes a kubectl command tree the same way. cmd/ccmlab's test
// compares the embedded kubectl's with Tree, so a kubectl upgrade that
// changes what a flag means or adds one cannot slip past the console
// unnoticed (a new flag is refused until it is allowlisted).
func TreeOf(root *cobra.Command) []string { return treeOf(root).describe() }
