package classroom

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/classroom/labclient"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

// class is the portal's view of everyone's progress, fed by the labs'
// streams.
type class struct {
	cfg    *Config
	tokens *tokens
	log    *slog.Logger
	status func(name string) (state, addr string)
	client *http.Client

	mu        sync.Mutex
	exercises []ExerciseColumn
	students  map[string]*studentProgress
	subs      map[chan struct{}]struct{}
}

// ExerciseColumn is one exercise of the dashboard: one cell per step.
type ExerciseColumn struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Steps int    `json:"steps"`
}

// Class is GET /api/class.
type Class struct {
	Time      time.Time        `json:"time"`
	Exercises []ExerciseColumn `json:"exercises"`
	Students  []StudentRow     `json:"students"`
}

// StudentRow is one student.
type StudentRow struct {
	Name string `json:"name"`
	// Lab is stopped, starting, ready or stopping.
	Lab string `json:"lab"`
	// Path opens the student's page (with the instructor's token: read-only).
	Path      string                  `json:"path"`
	Exercises map[string]ExerciseCell `json:"exercises"`
	// Current is the exercise the student last worked on and the step
	// they are at; nil before any.
	Current *Current `json:"current,omitempty"`
	// Stuck lists what the lab itself says cannot happen now (its flows'
	// stuck reasons), the longest stuck first.
	Stuck   []LabStuck `json:"stuck,omitempty"`
	Updated time.Time  `json:"updated,omitzero"`
}

// LabStuck is one flow of a lab that is stuck, as the lab's stream says:
// a node that cannot be initialized or a Service whose load balancer
// cannot be made, with the lab's reason code and message.
type LabStuck struct {
	// Kind is "node" or "service"; Key names it (a node, namespace/name).
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Since is when the portal first saw it stuck for this reason (or
	// connected to a lab that already was).
	Since   time.Time `json:"since"`
	Seconds int64     `json:"seconds"`
}

// ExerciseCell is a student's progress in one exercise: steps pass in
// order, so the first StepsPassed cells are passed. WrongAnswers (quiz
// choices, typed values, diagnoses) and HintsOpened (hints and solutions)
// say how the steps were passed, as the lab counted them.
type ExerciseCell struct {
	Steps        int  `json:"steps"`
	StepsPassed  int  `json:"stepsPassed"`
	Done         bool `json:"done"`
	WrongAnswers int  `json:"wrongAnswers"`
	HintsOpened  int  `json:"hintsOpened"`
}

// Current says where a student is.
type Current struct {
	Exercise  string    `json:"exercise"`
	Step      string    `json:"step,omitempty"`
	StepTitle string    `json:"stepTitle,omitempty"`
	Attempts  int       `json:"attempts"`
	Since     time.Time `json:"since,omitzero"`
	// StuckSeconds is how long since the last step passed (or the
	// exercise started).
	StuckSeconds int64 `json:"stuckSeconds"`
}

type studentProgress struct {
	stuck     map[string]LabStuck // by kind/key
	exercises map[string]ExerciseCell
	current   *Current
	last      string // the exercise the lab last reported on
	updated   time.Time
}

func newClass(cfg *Config, t *tokens) *class {
	c := &class{cfg: cfg, tokens: t, log: cfg.Logger.With("component", "progress"), client: &http.Client{Timeout: labclient.DefaultTimeout},
		students: map[string]*studentProgress{}, subs: map[chan struct{}]struct{}{}}
	for _, s := range cfg.Students {
		c.students[s] = &studentProgress{exercises: map[string]ExerciseCell{}}
	}
	return c
}

// subscribe returns a channel that receives (coalesced) a value after
// every change.
func (c *class) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

func (c *class) notifyLocked() {
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (c *class) notify() {
	c.mu.Lock()
	c.notifyLocked()
	c.mu.Unlock()
}

// snapshot is the class as of now.
func (c *class) snapshot() Class {
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Class{Time: now.UTC(), Exercises: slices.Clone(c.exercises), Students: []StudentRow{}}
	if out.Exercises == nil {
		out.Exercises = []ExerciseColumn{}
	}
	for _, name := range c.cfg.Students {
		p := c.students[name]
		row := StudentRow{Name: name, Path: "/s/" + name + "/", Exercises: map[string]ExerciseCell{}, Updated: p.updated}
		for _, st := range p.stuck {
			st.Seconds = int64(now.Sub(st.Since) / time.Second)
			row.Stuck = append(row.Stuck, st)
		}
		slices.SortFunc(row.Stuck, func(a, b LabStuck) int {
			if c := a.Since.Compare(b.Since); c != 0 {
				return c
			}
			return strings.Compare(a.Kind+"/"+a.Key, b.Kind+"/"+b.Key)
		})
		row.Lab, _ = c.status(name)
		for k, v := range p.exercises {
			row.Exercises[k] = v
		}
		if p.current != nil {
			cur := *p.current
			if !cur.Since.IsZero() {
				cur.StuckSeconds = int64(now.Sub(cur.Since) / time.Second)
			}
			row.Current = &cur
		}
		out.Students = append(out.Students, row)
	}
	return out
}

// watch follows one run of a lab's stream until done closes or ctx ends.
func (c *class) watch(ctx context.Context, name, addr string, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
		}
		cancel()
		// The lab's state changed; what it said is stuck no longer holds.
		c.mu.Lock()
		c.students[name].stuck = nil
		c.notifyLocked()
		c.mu.Unlock()
	}()
	c.notify()
	go func() {
		defer cancel()
		for ctx.Err() == nil {
			if err := c.follow(ctx, name, addr); err != nil && ctx.Err() == nil {
				c.log.Debug("following a lab's stream", "student", name, "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
}

// lab is the client of a student's lab at addr (a lab that restarts may
// come back at another address, so it is made per call; cheap).
func (c *class) lab(name, addr string) (*labclient.Client, error) {
	return labclient.New(labclient.Config{Addr: addr, Token: c.tokens.students[name], HTTP: c.client})
}

// follow reads the lab's /ws. A snapshot (every connect) and each
// "exercise" message make the portal re-read the lab's progress.
func (c *class) follow(ctx context.Context, name, addr string) error {
	lab, err := c.lab(name, addr)
	if err != nil {
		return err
	}
	st, err := lab.Stream(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		m, err := st.Next(ctx)
		if err != nil {
			return err
		}
		switch m.Type {
		case labapi.TypeSnapshot:
			var snap labapi.Flows
			if err := json.Unmarshal(m.Data, &snap); err == nil {
				c.stuckSnapshot(name, snap)
			}
			c.refresh(ctx, lab, name, "")
		case labapi.TypeNodeFlow:
			var ch labapi.NodeFlowChange
			if err := json.Unmarshal(m.Data, &ch); err == nil {
				var st *labapi.Stuck
				if ch.Data != nil {
					st = ch.Data.Stuck
				}
				c.stuckChange(name, "node", ch.Key, st)
			}
		case labapi.TypeServiceFlow:
			var ch labapi.ServiceFlowChange
			if err := json.Unmarshal(m.Data, &ch); err == nil {
				var st *labapi.Stuck
				if ch.Data != nil {
					st = ch.Data.Stuck
				}
				c.stuckChange(name, "service", ch.Key, st)
			}
		case labapi.TypeResync:
			c.refresh(ctx, lab, name, "")
		case labapi.TypeExercise:
			var d labapi.Exercise
			_ = json.Unmarshal(m.Data, &d)
			c.refresh(ctx, lab, name, d.Exercise)
		case labapi.TypeBye:
			return nil
		}
	}
}

// stuckSnapshot replaces what a lab says is stuck with its snapshot's
// flows, keeping the first-seen time of what was already stuck.
func (c *class) stuckSnapshot(name string, snap labapi.Flows) {
	now := c.cfg.Clock.Now().UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.students[name]
	old := p.stuck
	p.stuck = map[string]LabStuck{}
	add := func(kind, key string, st *labapi.Stuck) {
		if st == nil {
			return
		}
		since := now
		if o, ok := old[kind+"/"+key]; ok && o.Reason == st.Reason {
			since = o.Since
		}
		p.stuck[kind+"/"+key] = LabStuck{Kind: kind, Key: key, Reason: st.Reason, Message: st.Message, Since: since}
	}
	for _, f := range snap.NodeFlows {
		add("node", f.Node, f.Stuck)
	}
	for _, f := range snap.ServiceFlows {
		add("service", f.Service, f.Stuck)
	}
	c.notifyLocked()
}

// stuckChange applies one flow change: stuck (set or still), or not
// (st nil: moving again, or gone).
func (c *class) stuckChange(name, kind, key string, st *labapi.Stuck) {
	k := kind + "/" + key
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.students[name]
	old, was := p.stuck[k]
	switch {
	case st == nil && !was:
		return
	case st == nil:
		delete(p.stuck, k)
	case was && old.Reason == st.Reason && old.Message == st.Message:
		return
	default:
		since := c.cfg.Clock.Now().UTC()
		if was && old.Reason == st.Reason {
			since = old.Since
		}
		if p.stuck == nil {
			p.stuck = map[string]LabStuck{}
		}
		p.stuck[k] = LabStuck{Kind: kind, Key: key, Reason: st.Reason, Message: st.Message, Since: since}
	}
	c.notifyLocked()
}

// refresh re-reads a lab's progress; exercise, when known, is the one the
// lab just reported on.
func (c *class) refresh(ctx context.Context, lab *labclient.Client, name, exercise string) {
	list, err := lab.Exercises(ctx)
	if err != nil {
		c.log.Debug("reading a lab's exercises", "student", name, "err", err)
		return
	}
	c.mu.Lock()
	p := c.students[name]
	if exercise != "" {
		p.last = exercise
	}
	last := p.last
	if c.exercises == nil {
		for _, s := range list {
			c.exercises = append(c.exercises, ExerciseColumn{ID: s.ID, Title: s.Title, Steps: s.Steps})
		}
	}
	c.mu.Unlock()
	if last == "" {
		// Without a report yet (a fresh connect), the first exercise
		// started and not done is where the student is.
		for _, s := range list {
			if s.StepsPassed > 0 && !s.Done {
				last = s.ID
				break
			}
		}
	}
	var cur *Current
	if last != "" {
		if d, err := lab.Exercise(ctx, last); err == nil {
			cur = &Current{Exercise: last, Step: d.CurrentStep, Since: d.StartedAt}
			for _, st := range d.Steps {
				if st.Passed && st.PassedAt.After(cur.Since) {
					cur.Since = st.PassedAt
				}
				if st.ID == d.CurrentStep {
					cur.StepTitle, cur.Attempts = st.Title, st.Attempts
				}
			}
			if d.CurrentStep == "" {
				cur.Since = time.Time{} // done: not stuck
			}
		}
	}
	c.mu.Lock()
	p.exercises = map[string]ExerciseCell{}
	for _, s := range list {
		p.exercises[s.ID] = ExerciseCell{Steps: s.Steps, StepsPassed: s.StepsPassed, Done: s.Done, WrongAnswers: s.WrongAnswers, HintsOpened: s.HintsOpened}
	}
	p.current = cur
	p.updated = c.cfg.Clock.Now().UTC()
	c.notifyLocked()
	c.mu.Unlock()
}
