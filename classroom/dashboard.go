package classroom

import (
	"cmp"
	"embed"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

//go:embed assets
var assets embed.FS

// stepMarks says, for each of the exercise's steps, whether the student
// passed it.
func stepMarks(ex ExerciseColumn, c ExerciseCell) []bool {
	out := make([]bool, ex.Steps)
	for i := range out {
		out[i] = i < c.StepsPassed
	}
	return out
}

// stuckSeconds is how long on one step (or stuck in the lab) flags a row.
const stuckSeconds = 10 * 60

// where is the exercise a student last worked on, its step's title and
// how many checks the step took so far.
func where(cur *Current) string {
	if cur == nil {
		return ""
	}
	s := cur.Exercise
	if cur.StepTitle != "" {
		s += ": " + cur.StepTitle
	}
	if cur.Attempts > 0 {
		s += fmt.Sprintf(" (%d checks)", cur.Attempts)
	}
	return s
}

// sinceLastStep is how long the student has been on their step; empty
// before any.
func sinceLastStep(cur *Current) string {
	if cur == nil {
		return ""
	}
	return fmtSeconds(cur.StuckSeconds)
}

// fmtSeconds says a duration as the dashboard does: 45s, 12m, 1h05.
func fmtSeconds(s int64) string {
	switch {
	case s <= 0:
		return ""
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m"
	}
	return fmt.Sprintf("%dh%02d", s/3600, s%3600/60)
}

// cellTitle is an exercise cell's tooltip.
func cellTitle(ex ExerciseColumn, c ExerciseCell) string {
	return fmt.Sprintf("%s: %d/%d steps, %d wrong answer(s), %d hint(s) opened", ex.Title, c.StepsPassed, ex.Steps, c.WrongAnswers, c.HintsOpened)
}

// labStuckTitle lists everything the lab says is stuck, one per line.
func labStuckTitle(st []LabStuck) string {
	lines := make([]string, len(st))
	for i, x := range st {
		lines[i] = fmt.Sprintf("%s %s: %s (%s)", x.Kind, x.Key, x.Message, cmp.Or(fmtSeconds(x.Seconds), "0s"))
	}
	return strings.Join(lines, "\n")
}

const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// dashboard renders the class as it is now; dashboard.js keeps it live
// from /api/class/events.
func (c *Classroom) dashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", dashboardCSP)
	if err := dashboardPage(c.class.snapshot()).Render(r.Context(), w); err != nil {
		c.cfg.Logger.Error("rendering the dashboard", "err", err)
	}
}

// classTable renders the class table alone: dashboard.js fetches it on
// every change of the class, so the row markup lives in one place.
func (c *Classroom) classTable(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if err := classTable(c.class.snapshot()).Render(r.Context(), w); err != nil {
		c.cfg.Logger.Error("rendering the class table", "err", err)
	}
}

func serveAsset(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			httpguard.WriteError(w, http.StatusNotFound, "no such file")
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	}
}
