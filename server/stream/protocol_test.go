package stream

import (
	"encoding"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// messages holds one value of every message type; the test below makes
// sure no exported type of this package is missing from it.
var messages = map[string]any{
	"Snapshot":           Snapshot{},
	"Bye":                Bye{},
	"Change":             Change[struct{}]{},
	"NodeChange":         NodeChange{Kind: TypeNode},
	"PodChange":          PodChange{Kind: TypePod},
	"ServiceChange":      ServiceChange{Kind: TypeService},
	"EventChange":        EventChange{Kind: TypeEvent},
	"ServiceFlowChange":  ServiceFlowChange{Kind: TypeServiceFlow},
	"NodeFlowChange":     NodeFlowChange{Kind: TypeNodeFlow},
	"Call":               Call{},
	"InstanceChange":     InstanceChange{},
	"LoadBalancerChange": LoadBalancerChange{},
	"RoutesChange":       RoutesChange{},
	"Faults":             Faults{},
	"StepMode":           StepMode{},
	"Controllers":        Controllers{},
	"Listeners":          Listeners{},
	"Trace":              Trace{},
	"Exercise":           Exercise{},
	"Management":         Management{},
	// Parts of messages.
	"Profile":       Profile{},
	"CloudState":    CloudState{},
	"Listener":      Listener{},
	"ManagementCCM": ManagementCCM{},
	"ManagementVMI": ManagementVMI{},
	"Message":       (*Message)(nil),
}

// exportedTypes lists the exported type names declared in this package's
// non-test files.
func exportedTypes(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

var (
	marshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshal = reflect.TypeFor[encoding.TextMarshaler]()
)

// leaf reports whether a type is written as a JSON scalar of its own.
func leaf(t reflect.Type) bool {
	return t == reflect.TypeFor[time.Time]() || t.Implements(marshaler) || t.Implements(textMarshal)
}

// jsonFields lists the JSON names of a struct's fields as encoding/json
// writes them (embedded structs flattened), and every struct type they
// reach.
func jsonFields(t reflect.Type, reach func(reflect.Type)) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct && !leaf(ft) {
			out = append(out, jsonFields(ft, reach)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
		reach(ft)
	}
	return out
}

// docSections reads docs/protocol.md: for each heading "### `Name`", the
// first column of the table under it (field names in backticks).
func docSections(t *testing.T) (string, map[string][]string) {
	b, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^#{2,4} `([^`]+)`")
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	sections := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			cur = m[1]
			sections[cur] = []string{}
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = ""
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != "" {
			sections[cur] = append(sections[cur], m[1])
		}
	}
	return string(b), sections
}

// docName is how the document heads a type: its name in this package,
// package-qualified otherwise.
func docName(t reflect.Type) string {
	if t == reflect.TypeFor[cloud.Call]() {
		return "Call" // stream.Call is cloud.Call under the message's name
	}
	// Change and Exercise are this package's messages, defined in
	// internal/labapi (where the classroom reads them) and named here by
	// aliases.
	if t.PkgPath() == reflect.TypeFor[Bye]().PkgPath() || t == reflect.TypeFor[Exercise]() || strings.HasPrefix(t.Name(), "Change[") && t.PkgPath() == reflect.TypeFor[Exercise]().PkgPath() {
		if i := strings.IndexByte(t.Name(), '['); i >= 0 {
			return t.Name()[:i]
		}
		return t.Name()
	}
	return t.String()
}

// TestProtocolDocument keeps docs/protocol.md true: every message type and
// every struct a message carries has a section whose field table names
// exactly the JSON fields the code writes; every envelope type is in the
// types table; and the document names nothing that is not in the code.
func TestProtocolDocument(t *testing.T) {
	doc, sections := docSections(t)

	for _, name := range exportedTypes(t) {
		if _, ok := messages[name]; !ok {
			t.Errorf("stream.%s is not in the messages table of protocol_test.go: add it there and describe it in docs/protocol.md", name)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/protocol.md does not mention stream.%s", name)
		}
	}

	want := map[string][]string{} // doc name -> fields
	var visit func(reflect.Type)
	visit = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || leaf(rt) || rt.Name() == "" {
			return
		}
		n := docName(rt)
		if _, seen := want[n]; seen {
			return
		}
		want[n] = nil // before recursing: types may refer to themselves
		want[n] = jsonFields(rt, visit)
	}
	for _, m := range messages {
		if m != nil && reflect.TypeOf(m).Kind() != reflect.Pointer {
			visit(reflect.TypeOf(m))
		}
	}
	delete(want, "Change") // the instance Change[struct{}] stands for the generic type
	want["Change"] = []string{"type", "op", "key", "data"}

	for name, fields := range want {
		got, ok := sections[name]
		if !ok {
			t.Errorf("docs/protocol.md has no section \"### `%s`\"; its fields are %s", name, strings.Join(fields, ", "))
			continue
		}
		if !slices.Equal(sorted(got), sorted(fields)) {
			t.Errorf("docs/protocol.md, `%s`: the table lists %v, the code writes %v", name, got, fields)
		}
	}
	for name := range sections {
		if _, ok := want[name]; !ok {
			if _, isMsg := messages[name]; !isMsg {
				t.Errorf("docs/protocol.md describes `%s`, which no message carries", name)
			}
		}
	}

	// The types table: its rows are exactly Types().
	var rows []string
	inTypes := false
	row := regexp.MustCompile("^\\| `([a-z]+)` +\\|")
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "### Types"):
			inTypes = true
		case strings.HasPrefix(line, "#"):
			inTypes = false
		case inTypes:
			if m := row.FindStringSubmatch(line); m != nil {
				rows = append(rows, m[1])
			}
		}
	}
	if !slices.Equal(sorted(rows), sorted(Types())) {
		t.Errorf("docs/protocol.md's types table lists %v; the code has %v", rows, Types())
	}
	for name, m := range messages {
		if msg, ok := m.(Message); ok && !slices.Contains(Types(), msg.Type()) && name != "Change" {
			t.Errorf("stream.%s travels as %q, which Types() does not list", name, msg.Type())
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
