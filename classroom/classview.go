package classroom

// The dashboard's reads: the class as JSON, as a stream of events and as
// CSV, all from class.snapshot (progress.go).

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// getClass is GET /api/class: the class as of now.
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
