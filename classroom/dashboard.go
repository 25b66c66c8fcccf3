package classroom

import (
	"embed"
	"html/template"
	"net/http"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

//go:embed assets
var assets embed.FS

var dashboardTmpl = template.Must(template.New("dashboard.html").Funcs(template.FuncMap{
	"cells": func(ex ExerciseColumn, c ExerciseCell) []bool {
		out := make([]bool, ex.Steps)
		for i := range out {
			out[i] = i < c.StepsPassed
		}
		return out
	},
}).ParseFS(assets, "assets/dashboard.html"))

const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// dashboard renders the class as it is now; dashboard.js keeps it live
// from /api/class/events.
func (c *Classroom) dashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", dashboardCSP)
	if err := dashboardTmpl.Execute(w, c.class.snapshot()); err != nil {
		c.cfg.Logger.Error("rendering the dashboard", "err", err)
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
