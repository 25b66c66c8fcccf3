package classroom

// The dashboard's actions on the labs (reset an exercise, set the cloud
// latency; the diagnosis challenge is in challenge.go): each is checked
// whole before any lab is called, then sent to every targeted lab through
// its labclient.

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/classroom/labclient"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

// ActionResult is what one lab answered to an action.
type ActionResult struct {
	Student string `json:"student"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
}

type actionTarget struct {
	// Students the action applies to; empty means everyone.
	Students []string `json:"students,omitempty"`
}

// The actions' bodies.
type (
	// resetRequest is POST /api/actions/reset.
	resetRequest struct {
		actionTarget
		Exercise string `json:"exercise"`
	}
	// latencyRequest is PUT /api/actions/latency: a duration such as "2s".
	latencyRequest struct {
		actionTarget
		Latency string `json:"latency"`
	}
	// challengeRequest is POST /api/actions/challenge; no cause: each lab
	// picks one at random.
	challengeRequest struct {
		actionTarget
		Cause string `json:"cause,omitempty"`
	}
)

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
func (c *Classroom) each(ctx context.Context, students []string, fn func(ctx context.Context, lab *labclient.Client) error) ([]ActionResult, error) {
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
		lab, err := c.class.lab(s, addr)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		wg.Go(func() {
			if err := fn(ctx, lab); err != nil {
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
	for _, lab := range c.runningLabs() {
		list, err := lab.Exercises(ctx)
		if err != nil {
			continue
		}
		for _, ex := range list {
			ids = append(ids, ex.ID)
		}
		return ids
	}
	return nil
}

// runningLabs yields the student and the client of every lab that is
// ready, in the class's order: what the portal asks when any lab will do.
func (c *Classroom) runningLabs() iter.Seq2[string, *labclient.Client] {
	return func(yield func(string, *labclient.Client) bool) {
		for _, s := range c.cfg.Students {
			state, addr := c.backend.Status(s)
			if state != stateReady {
				continue
			}
			lab, err := c.class.lab(s, addr)
			if err != nil {
				continue
			}
			if !yield(s, lab) {
				return
			}
		}
	}
}

// actionReset resets one exercise in the chosen labs:
// {"exercise": "node-init", "students": ["alice"]}.
func (c *Classroom) actionReset(w http.ResponseWriter, r *http.Request) {
	var req resetRequest
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
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, lab *labclient.Client) error {
		_, err := lab.Reset(ctx, req.Exercise, labapi.ResetOptions{})
		return err
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
	var req latencyRequest
	if !decodeBody(w, r, &req) {
		return
	}
	d, err := time.ParseDuration(req.Latency)
	if err != nil || d < 0 || d > labapi.MaxLatency {
		httpguard.WriteError(w, http.StatusBadRequest, fmt.Sprintf("latency %q: want a duration from 0s to %s, like \"2s\"", req.Latency, labapi.MaxLatency))
		return
	}
	if !c.knownStudents(w, req.Students) {
		return
	}
	res, err := c.each(r.Context(), req.Students, func(ctx context.Context, lab *labclient.Client) error {
		_, err := lab.SetLatency(ctx, d)
		return err
	})
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}
