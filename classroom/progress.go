package classroom

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/server/stream"
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
	c := &class{cfg: cfg, tokens: t, log: cfg.Logger.With("component", "progress"), client: &http.Client{Timeout: 2 * time.Minute},
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

type streamMsg struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// follow reads the lab's /ws. A snapshot (every connect) and each
// "exercise" message make the portal re-read the lab's progress.
func (c *class) follow(ctx context.Context, name, addr string) error {
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.tokens.students[name]}},
	})
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20) // snapshots are big
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var m streamMsg
		if err := json.Unmarshal(b, &m); err != nil {
			continue
		}
		switch m.Type {
		case stream.TypeSnapshot:
			var snap flow.Snapshot
			if err := json.Unmarshal(m.Data, &snap); err == nil {
				c.stuckSnapshot(name, snap)
			}
			c.refresh(ctx, name, addr, "")
		case stream.TypeNodeFlow:
			var ch stream.NodeFlowChange
			if err := json.Unmarshal(m.Data, &ch); err == nil {
				var st *flow.Stuck
				if ch.Data != nil {
					st = ch.Data.Stuck
				}
				c.stuckChange(name, "node", ch.Key, st)
			}
		case stream.TypeServiceFlow:
			var ch stream.ServiceFlowChange
			if err := json.Unmarshal(m.Data, &ch); err == nil {
				var st *flow.Stuck
				if ch.Data != nil {
					st = ch.Data.Stuck
				}
				c.stuckChange(name, "service", ch.Key, st)
			}
		case "resync":
			c.refresh(ctx, name, addr, "")
		case "exercise":
			var d struct {
				Exercise string `json:"exercise"`
			}
			_ = json.Unmarshal(m.Data, &d)
			c.refresh(ctx, name, addr, d.Exercise)
		case "bye":
			return nil
		}
	}
}

// stuckSnapshot replaces what a lab says is stuck with its snapshot's
// flows, keeping the first-seen time of what was already stuck.
func (c *class) stuckSnapshot(name string, snap flow.Snapshot) {
	now := c.cfg.Clock.Now().UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.students[name]
	old := p.stuck
	p.stuck = map[string]LabStuck{}
	add := func(kind, key string, st *flow.Stuck) {
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
func (c *class) stuckChange(name, kind, key string, st *flow.Stuck) {
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

// summary is the part of the lab's GET /api/exercises the portal reads.
type summary struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Available   bool   `json:"available"`
	Steps       int    `json:"steps"`
	StepsPassed int    `json:"stepsPassed"`
	Done        bool   `json:"done"`
	// Counted by the lab; a lab of an older version says 0.
	WrongAnswers int `json:"wrongAnswers"`
	HintsOpened  int `json:"hintsOpened"`
}

type detail struct {
	StartedAt   time.Time `json:"startedAt"`
	CurrentStep string    `json:"currentStep"`
	Steps       []struct {
		ID       string    `json:"id"`
		Title    string    `json:"title"`
		Passed   bool      `json:"passed"`
		PassedAt time.Time `json:"passedAt"`
		Attempts int       `json:"attempts"`
	} `json:"steps"`
}

// refresh re-reads a lab's progress; exercise, when known, is the one the
// lab just reported on.
func (c *class) refresh(ctx context.Context, name, addr, exercise string) {
	var list []summary
	if err := c.labJSON(ctx, name, addr, http.MethodGet, "/api/exercises", nil, &list); err != nil {
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
		var d detail
		if err := c.labJSON(ctx, name, addr, http.MethodGet, "/api/exercises/"+url.PathEscape(last), nil, &d); err == nil {
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

// labError is a lab's answer that was not a success.
type labError struct {
	Method, Path, Status, Message string
	Code                          int
}

func (e *labError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, e.Status, e.Message)
}

// labJSON calls a lab's API with the student's token.
func (c *class) labJSON(ctx context.Context, name, addr, method, path string, body, out any) error {
	b, err := c.labRaw(ctx, name, addr, method, path, body)
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// labRaw calls a lab's API with the student's token and returns the body
// of a 2xx answer; any other is a *labError.
func (c *class) labRaw(ctx context.Context, name, addr, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.tokens.students[name])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if res.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		msg := e.Message + e.Error
		if msg == "" {
			msg = string(bytes.TrimSpace(b))
		}
		return nil, &labError{Method: method, Path: path, Status: res.Status, Message: msg, Code: res.StatusCode}
	}
	return b, nil
}

func (c *Classroom) getClass(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, c.class.snapshot())
}

// classEvents streams the class as server-sent events: the whole class
// after every change (a class is small), and every few seconds so the
// "stuck for" times move.
func (c *Classroom) classEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpguard.WriteError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ch, stop := c.class.subscribe()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	tick := c.cfg.Clock.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		b, _ := json.Marshal(c.class.snapshot())
		if _, err := fmt.Fprintf(w, "event: class\ndata: %s\n\n", b); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		case <-tick.C():
		}
	}
}

// classCSV exports one line per student and exercise.
func (c *Classroom) classCSV(w http.ResponseWriter, r *http.Request) {
	cl := c.class.snapshot()
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="class-progress.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"student", "exercise", "steps", "steps_passed", "done", "current_step", "stuck_seconds", "lab_stuck_reason", "lab_stuck_seconds", "wrong_answers", "hints_opened"})
	for _, s := range cl.Students {
		labReason, labStuck := "", ""
		if len(s.Stuck) > 0 {
			labReason, labStuck = s.Stuck[0].Reason, strconv.FormatInt(s.Stuck[0].Seconds, 10)
		}
		for _, ex := range cl.Exercises {
			cell := s.Exercises[ex.ID]
			step, stuck := "", ""
			if s.Current != nil && s.Current.Exercise == ex.ID {
				step, stuck = s.Current.Step, strconv.FormatInt(s.Current.StuckSeconds, 10)
			}
			_ = cw.Write([]string{s.Name, ex.ID, strconv.Itoa(ex.Steps), strconv.Itoa(cell.StepsPassed), strconv.FormatBool(cell.Done), step, stuck, labReason, labStuck,
				strconv.Itoa(cell.WrongAnswers), strconv.Itoa(cell.HintsOpened)})
		}
	}
	cw.Flush()
}

// ActionResult is what one lab answered to an action.
type ActionResult struct {
	Student string `json:"student"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
}

type actionTarget struct {
	// Students the action applies to; empty means everyone.
	Students []string `json:"students"`
}

// knownStudents refuses (400) a target list naming someone not in the
// class, or someone twice, before anything is sent to any lab.
func (c *Classroom) knownStudents(w http.ResponseWriter, students []string) bool {
	seen := map[string]bool{}
	for _, s := range students {
		if !c.known(s) {
			httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("no student %q in this class", s))
			return false
		}
		if seen[s] {
			httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("student %q is named twice", s))
			return false
		}
		seen[s] = true
	}
	return true
}

// each runs fn on every targeted lab that is running, in parallel. A lab
// that is not running is reported, not started: resetting a class should
// not start thirty labs.
func (c *Classroom) each(ctx context.Context, students []string, fn func(ctx context.Context, name, addr string) error) ([]ActionResult, error) {
	if len(students) == 0 {
		students = c.cfg.Students
	}
	for _, s := range students {
		if !c.known(s) {
			return nil, fmt.Errorf("no student %q in this class", s)
		}
	}
	out := make([]ActionResult, len(students))
	var wg sync.WaitGroup
	for i, s := range students {
		out[i].Student = s
		state, addr := c.backend.Status(s)
		if state != stateReady {
			out[i].Error = "the lab is " + state
			continue
		}
		wg.Go(func() {
			if err := fn(ctx, s, addr); err != nil {
				out[i].Error = err.Error()
			} else {
				out[i].OK = true
			}
		})
	}
	wg.Wait()
	return out, nil
}

// decodeBody reads an action's body with httpguard.DecodeJSON (64 KiB,
// application/json, no duplicate keys, no unknown fields), answering the
// refusal itself.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if e := httpguard.DecodeJSON(w, r, v, httpguard.DecodeOptions{}); e != nil {
		httpguard.WriteError(w, e.Code, e.Msg)
		return false
	}
	return true
}

// exerciseRE is the shape of an exercise id.
var exerciseRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// knownExercises are the class's exercise ids: the dashboard's columns,
// else what the first running lab lists; nil when no lab has said (then
// no lab runs, and an action reaches none).
func (c *Classroom) knownExercises(ctx context.Context) []string {
	c.class.mu.Lock()
	var ids []string
	for _, ex := range c.class.exercises {
		ids = append(ids, ex.ID)
	}
	c.class.mu.Unlock()
	if ids != nil {
		return ids
	}
	for _, s := range c.cfg.Students {
		state, addr := c.backend.Status(s)
		if state != stateReady {
			continue
		}
		var list []summary
		if err := c.class.labJSON(ctx, s, addr, http.MethodGet, "/api/exercises", nil, &list); err != nil {
			continue
		}
		for _, ex := range list {
			ids = append(ids, ex.ID)
		}
		return ids
	}
	return nil
}

// actionReset resets one exercise in the chosen labs:
// {"exercise": "node-init", "students": ["alice"]}.
func (c *Classroom) actionReset(w http.ResponseWriter, r *http.Request) {
	var req struct {
		actionTarget
		Exercise string `json:"exercise"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Exercise == "" {
		httpguard.WriteError(w, http.StatusBadRequest, `say which exercise: {"exercise": "<id>"}`)
		return
	}
	if !exerciseRE.MatchString(req.Exercise) {
		httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("exercise %q: give an exercise's id, like node-init", req.Exercise))
		return
	}
	if !c.knownStudents(w, req.Students) {
		return
	}
	if ids := c.knownExercises(r.Context()); ids != nil && !slices.Contains(ids, req.Exercise) {
		httpguard.WriteError(w, http.StatusNotFound, fmt.Sprintf("no exercise %q in the class's labs (they have %s)", req.Exercise, strings.Join(ids, ", ")))
		return
	}
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, name, addr string) error {
		return c.class.labJSON(ctx, name, addr, http.MethodPost, "/api/exercises/"+url.PathEscape(req.Exercise)+"/reset", nil, nil)
	})
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}

// actionLatency sets the cloud latency in the chosen labs, keeping their
// other faults: {"latency": "2s", "students": []}.
func (c *Classroom) actionLatency(w http.ResponseWriter, r *http.Request) {
	var req struct {
		actionTarget
		Latency string `json:"latency"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	d, err := time.ParseDuration(req.Latency)
	if err != nil || d < 0 || d > time.Minute {
		httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("latency %q: want a duration from 0s to 1m, like \"2s\"", req.Latency))
		return
	}
	if !c.knownStudents(w, req.Students) {
		return
	}
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, name, addr string) error {
		var faults map[string]any
		if err := c.class.labJSON(ctx, name, addr, http.MethodGet, "/api/cloud/faults", nil, &faults); err != nil {
			return err
		}
		faults["latency"] = d.String()
		return c.class.labJSON(ctx, name, addr, http.MethodPut, "/api/cloud/faults", faults, nil)
	})
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}
