package format

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// The exercise files. One file per exercise; docs/exercises.md describes them.
//
//go:embed defs/*.yaml
var defsFS embed.FS

// Namespace is where every exercise's objects live, as in the chapter:
// the checks look there and setup.delete deletes there.
const Namespace = "default"

// Languages every text must be written in.
const (
	LangJA = string(i18n.JA)
	LangEN = string(i18n.EN)
)

// Text is one string in both of the lab's languages: internal/i18n's, so
// the exercise files, the checks' verdicts and the page share one
// mechanism. Both are required: a file with a missing translation does not
// load.
type Text = i18n.Text

// Exercise is one file of defs/.
type Exercise struct {
	ID    string `json:"id"`
	Order int    `json:"order"`
	// Minutes is the estimated time a student needs (required, 1 to 180).
	Minutes int  `json:"minutes"`
	Title   Text `json:"title"`
	Goal    Text `json:"goal"`
	// Ending is shown once the exercise is complete (required): what the
	// student saw, the chapter section it belongs to and which of the
	// chapter's three goals it serves. Kept apart from Goal because it
	// names what the student was meant to find, so it must not be shown
	// before.
	Ending Text       `json:"ending"`
	Setup  Setup      `json:"setup"`
	Steps  []Step     `json:"steps,omitempty"`
	Quiz   []Question `json:"quiz,omitempty"`
}

// Setup is what "reset exercise" applies to the running lab.
type Setup struct {
	// About explains the starting state to the student.
	About Text `json:"about"`
	// Profiles the exercise works in; empty means every profile.
	Profiles []string `json:"profiles,omitempty"`
	// Requires lists controllers or add-ons the lab must have (switched on
	// or off does not matter), e.g. "service" or "lbc".
	Requires []string `json:"requires,omitempty"`
	// Controllers sets switches after the reset. A controller or add-on
	// not listed goes back to its start-up default (the profile's default
	// for controllers, on for installed add-ons).
	Controllers map[string]bool `json:"controllers,omitempty"`
	// Delete lists the exercise's own objects, deleted (and waited for) on
	// reset. All live in the default namespace.
	Delete []ObjectRef `json:"delete,omitempty"`
	// Nodes is how many running instances the lab must have at least; 0
	// means the lab's configured node count.
	Nodes int `json:"nodes,omitempty"`
	// TaintNodes puts the uninitialized taint back on every Node, as a
	// kubelet started with --cloud-provider=external registers it.
	TaintNodes bool `json:"taintNodes,omitempty"`
	// Uncordon makes every Node schedulable again.
	Uncordon bool `json:"uncordon,omitempty"`
	// FreshNodes replaces every VM by a new one launched while the Node
	// controller is off: Nodes as kubelets register them, with the
	// uninitialized taint, no providerID and no cloud labels, that no Node
	// controller has touched. Requires controllers.node: false.
	FreshNodes bool `json:"freshNodes,omitempty"`
	// Latency, e.g. "1s", is set as the cloud's per-call latency by the
	// reset, so that steps a student is meant to watch take about a second
	// each (classroom pace); the page shows it and the instructor can
	// still change it. Empty leaves the latency as it is. At most 5s.
	Latency string `json:"latency,omitempty"`
}

// MaxSetupLatency bounds Setup.Latency.
const MaxSetupLatency = 5 * time.Second

// LatencyDuration is Setup.Latency parsed (0 when unset).
func (s Setup) LatencyDuration() time.Duration {
	d, _ := time.ParseDuration(s.Latency)
	return d
}

// ObjectRef names one object an exercise creates.
type ObjectRef struct {
	Kind string `json:"kind"` // Deployment, Service or Pod
	Name string `json:"name"`
}

// Step is one thing to do and what proves it was done.
type Step struct {
	ID    string `json:"id"`
	Title Text   `json:"title"`
	Body  Text   `json:"body"`
	// Commands to try. Lines the lab console accepts are marked as such
	// when the exercise is shown; the others (pipes, sleep) are for a
	// terminal with the lab's kubeconfig.
	Commands []string    `json:"commands,omitempty"`
	Checks   []CheckSpec `json:"checks,omitempty"`
	// Answer, when set, asks the student to type a value read from the lab
	// (an instance ID, a zone, the client IP a Pod saw); the step passes
	// only once the typed value matches the lab's and the checks hold.
	Answer *AnswerSpec `json:"answer,omitempty"`
	Hints  []Text      `json:"hints,omitempty"`
	// Solution is what passes the step: the exact commands, and the page
	// actions in words; the page reveals it once a hint was opened.
	// Required.
	Solution    []SolutionItem `json:"solution"`
	Explanation Text           `json:"explanation"`
}

// SolutionItem is one line of a solution: a command (Cmd) or something to
// do on the page or with the API, in words (Do). Exactly one is set.
type SolutionItem struct {
	Cmd string `json:"cmd,omitempty"`
	Do  *Text  `json:"do,omitempty"`
}

// AnswerSpec is a value the student types. Which kinds exist (what lab
// value they are compared with) is the checker's business, as for checks
// (check.AnswerKinds).
type AnswerSpec struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"` // a Service in default, for kinds about one
	Prompt Text   `json:"prompt"`
}

// Question is a multiple-choice question with the reasoning for each
// choice.
type Question struct {
	ID       string   `json:"id"`
	Question Text     `json:"question"`
	Choices  []Choice `json:"choices"`
}

// Choice is one answer.
type Choice struct {
	Text    Text `json:"text"`
	Correct bool `json:"correct,omitempty"`
	// Why explains why this choice is right or wrong.
	Why Text `json:"why"`
}

// CheckSpec is one named check with its parameters. This package only
// reads it: which kinds exist and which parameters each takes is the
// checker's business (package check, check.Validate) and is documented in
// docs/exercises.md.
type CheckSpec struct {
	Kind string `json:"kind"`

	Name       string   `json:"name,omitempty"`       // a Service or Deployment in default
	Nodes      string   `json:"nodes,omitempty"`      // "all" (default), "new" or "workers" (all but the control-plane node)
	Selector   string   `json:"selector,omitempty"`   // a label selector for Pods
	Reason     string   `json:"reason,omitempty"`     // substring of a Pod's scheduling message, or a flow stuck reason
	Reasons    []string `json:"reasons,omitempty"`    // event reasons
	Message    string   `json:"message,omitempty"`    // substring of an event message
	State      string   `json:"state,omitempty"`      // pending or set
	Controller string   `json:"controller,omitempty"` // node, nodelifecycle, route, service, lbc
	Enabled    *bool    `json:"enabled,omitempty"`
	Action     string   `json:"action,omitempty"` // a cloud API action
	Denied     *bool    `json:"denied,omitempty"`
	Mode       string   `json:"mode,omitempty"`   // instance or ip
	Policy     string   `json:"policy,omitempty"` // Cluster or Local
	Via        string   `json:"via,omitempty"`    // clusterip, nodeport or loadbalancer
	Class      string   `json:"class,omitempty"`  // a loadBalancerClass
	Min        int      `json:"min,omitempty"`
	Step       int      `json:"step,omitempty"` // a six-step flow step

	// Parameters of the evidence kinds, which read the lab's history.
	Resource   string `json:"resource,omitempty"`   // nodes, services or pods
	Change     string `json:"change,omitempty"`     // what changed (objectChange)
	By         string `json:"by,omitempty"`         // who: ccm, kubelet, kubectl, notccm
	WhileOff   string `json:"whileOff,omitempty"`   // a controller that must have been off
	Caller     string `json:"caller,omitempty"`     // a cloud call's caller
	Result     string `json:"result,omitempty"`     // ok or error
	Code       string `json:"code,omitempty"`       // a cloud error code, e.g. AccessDenied
	ExtraHop   *bool  `json:"extraHop,omitempty"`   // a trace took (or not) the extra hop
	SourceKept *bool  `json:"sourceKept,omitempty"` // the Pod saw (or not) the client's IP
}

// Switches are the names setup.requires and setup.controllers accept, and
// the ones the lab's controller switches report: the CCM controllers and
// the add-ons.
func Switches() []string { return append(profile.AllControllers(), ccmnames.AddonLBC) }

// validID: lower-case letters and digits in words joined by single dashes.
func validID(id string) bool {
	if id == "" || strings.HasPrefix(id, "-") || strings.HasSuffix(id, "-") || strings.Contains(id, "--") {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// LoadAll reads and validates every embedded exercise, in Order.
func LoadAll() ([]*Exercise, error) { return loadFS(defsFS, "defs") }

func loadFS(fsys fs.FS, dir string) ([]*Exercise, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []*Exercise
	ids := map[string]string{}
	orders := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ex, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if other, ok := ids[ex.ID]; ok {
			return nil, fmt.Errorf("%s: id %q already used by %s", e.Name(), ex.ID, other)
		}
		if other, ok := orders[ex.Order]; ok {
			return nil, fmt.Errorf("%s: order %d already used by %s", e.Name(), ex.Order, other)
		}
		ids[ex.ID], orders[ex.Order] = e.Name(), e.Name()
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, errors.New("no exercises found")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}

// Parse reads one exercise file (YAML or JSON) strictly, unknown fields
// being errors, and validates it.
func Parse(b []byte) (*Exercise, error) {
	var ex Exercise
	if err := yaml.UnmarshalStrict(b, &ex); err != nil {
		return nil, err
	}
	if err := ex.validate(); err != nil {
		return nil, err
	}
	return &ex, nil
}

// validate checks the structure: ids, both languages of every text, known
// profiles and controllers, a kind on every check, quizzes with exactly
// one correct choice. The checks' kinds and parameters are validated by
// package check, which the service runs on every spec it loads.
//
// Errors name the field by its path in the file (steps[0].hints[1].en), as
// apimachinery's field package writes it for Kubernetes objects.
func (ex *Exercise) validate() error {
	var errs field.ErrorList
	text := func(p *field.Path, t Text) {
		if strings.TrimSpace(t.JA) == "" {
			errs = append(errs, field.Required(p.Child(LangJA), "every text is written in ja and en"))
		}
		if strings.TrimSpace(t.EN) == "" {
			errs = append(errs, field.Required(p.Child(LangEN), "every text is written in ja and en"))
		}
	}
	id := func(p *field.Path, v string) {
		if !validID(v) {
			errs = append(errs, field.Invalid(p, v, "use lower-case words joined by dashes"))
		}
	}
	id(field.NewPath("id"), ex.ID)
	if ex.Order <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("order"), ex.Order, "must be positive"))
	}
	if ex.Minutes < 1 || ex.Minutes > 180 {
		errs = append(errs, field.Invalid(field.NewPath("minutes"), ex.Minutes, "say how long the exercise takes, 1 to 180"))
	}
	setup := field.NewPath("setup")
	if ex.Setup.Latency != "" {
		if d, err := time.ParseDuration(ex.Setup.Latency); err != nil || d <= 0 || d > MaxSetupLatency {
			errs = append(errs, field.Invalid(setup.Child("latency"), ex.Setup.Latency, fmt.Sprintf("a duration above 0 and at most %s", MaxSetupLatency)))
		}
	}
	if ex.Setup.FreshNodes {
		if on, ok := ex.Setup.Controllers[profile.Node]; !ok || on {
			errs = append(errs, field.Invalid(setup.Child("freshNodes"), true, "needs setup.controllers.node: false"))
		}
	}
	text(field.NewPath("title"), ex.Title)
	text(field.NewPath("goal"), ex.Goal)
	text(field.NewPath("ending"), ex.Ending)
	text(setup.Child("about"), ex.Setup.About)
	if len(ex.Steps) == 0 && len(ex.Quiz) == 0 {
		errs = append(errs, field.Required(field.NewPath("steps"), "an exercise needs steps or a quiz"))
	}
	for i, p := range ex.Setup.Profiles {
		if !slices.Contains(profile.Names(), p) {
			errs = append(errs, field.NotSupported(setup.Child("profiles").Index(i), p, profile.Names()))
		}
	}
	for i, c := range ex.Setup.Requires {
		if !slices.Contains(Switches(), c) {
			errs = append(errs, field.NotSupported(setup.Child("requires").Index(i), c, Switches()))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(ex.Setup.Controllers)) {
		if !slices.Contains(Switches(), c) {
			errs = append(errs, field.NotSupported(setup.Child("controllers").Key(c), c, Switches()))
		}
	}
	for i, o := range ex.Setup.Delete {
		p := setup.Child("delete").Index(i)
		switch o.Kind {
		case "Deployment", "Service", "Pod":
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), o.Kind, []string{"Deployment", "Service", "Pod"}))
		}
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
	}
	if ex.Setup.Nodes < 0 || ex.Setup.Nodes > 20 {
		errs = append(errs, field.Invalid(setup.Child("nodes"), ex.Setup.Nodes, "must be between 0 and 20"))
	}
	stepIDs := map[string]bool{}
	for i, s := range ex.Steps {
		p := field.NewPath("steps").Index(i)
		id(p.Child("id"), s.ID)
		if stepIDs[s.ID] {
			errs = append(errs, field.Duplicate(p.Child("id"), s.ID))
		}
		stepIDs[s.ID] = true
		text(p.Child("title"), s.Title)
		text(p.Child("body"), s.Body)
		text(p.Child("explanation"), s.Explanation)
		for j, h := range s.Hints {
			text(p.Child("hints").Index(j), h)
		}
		for j, c := range s.Commands {
			if strings.TrimSpace(c) == "" {
				errs = append(errs, field.Required(p.Child("commands").Index(j), "an empty command"))
			}
		}
		if len(s.Checks) == 0 && s.Answer == nil {
			errs = append(errs, field.Required(p.Child("checks"), "a step needs at least one check or an answer"))
		}
		if s.Answer != nil {
			if s.Answer.Kind == "" {
				errs = append(errs, field.Required(p.Child("answer", "kind"), ""))
			}
			text(p.Child("answer", "prompt"), s.Answer.Prompt)
		}
		if len(s.Solution) == 0 {
			errs = append(errs, field.Required(p.Child("solution"), "a step needs a solution (the exact commands)"))
		}
		for j, c := range s.Solution {
			w := p.Child("solution").Index(j)
			switch {
			case c.Do != nil && c.Cmd != "":
				errs = append(errs, field.Invalid(w, c.Cmd, "set cmd or do, not both"))
			case c.Do != nil:
				text(w.Child("do"), *c.Do)
			case strings.TrimSpace(c.Cmd) == "":
				errs = append(errs, field.Required(w.Child("cmd"), "set cmd or do"))
			}
		}
		for j, c := range s.Checks {
			if c.Kind == "" {
				errs = append(errs, field.Required(p.Child("checks").Index(j).Child("kind"), ""))
			}
		}
	}
	qIDs := map[string]bool{}
	for i, q := range ex.Quiz {
		p := field.NewPath("quiz").Index(i)
		id(p.Child("id"), q.ID)
		if qIDs[q.ID] {
			errs = append(errs, field.Duplicate(p.Child("id"), q.ID))
		}
		qIDs[q.ID] = true
		text(p.Child("question"), q.Question)
		if len(q.Choices) < 2 {
			errs = append(errs, field.TooFew(p.Child("choices"), len(q.Choices), 2))
		}
		correct := 0
		for j, c := range q.Choices {
			text(p.Child("choices").Index(j).Child("text"), c.Text)
			text(p.Child("choices").Index(j).Child("why"), c.Why)
			if c.Correct {
				correct++
			}
		}
		if correct != 1 {
			errs = append(errs, field.Invalid(p.Child("choices"), fmt.Sprintf("%d correct", correct), "exactly one choice must be correct"))
		}
	}
	return errs.ToAggregate()
}

// texts lists every text of the exercise by its path in the file, for the
// test that both languages are present.
func (ex *Exercise) texts() map[string]Text {
	m := map[string]Text{"title": ex.Title, "goal": ex.Goal, "ending": ex.Ending, "setup.about": ex.Setup.About}
	for i, s := range ex.Steps {
		p := field.NewPath("steps").Index(i)
		m[p.Child("title").String()], m[p.Child("body").String()], m[p.Child("explanation").String()] = s.Title, s.Body, s.Explanation
		if s.Answer != nil {
			m[p.Child("answer", "prompt").String()] = s.Answer.Prompt
		}
		for j, c := range s.Solution {
			if c.Do != nil {
				m[p.Child("solution").Index(j).Child("do").String()] = *c.Do
			}
		}
		for j, h := range s.Hints {
			m[p.Child("hints").Index(j).String()] = h
		}
	}
	for i, q := range ex.Quiz {
		p := field.NewPath("quiz").Index(i)
		m[p.Child("question").String()] = q.Question
		for j, c := range q.Choices {
			m[p.Child("choices").Index(j).Child("text").String()] = c.Text
			m[p.Child("choices").Index(j).Child("why").String()] = c.Why
		}
	}
	return m
}
