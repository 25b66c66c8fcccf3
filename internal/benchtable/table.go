package benchtable

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Results maps a benchmark name (without -GOMAXPROCS) to its metrics by
// unit. A benchmark run more than once (go test -count) has the median of
// its runs' figures, each metric on its own: one slow run of a long
// benchmark on a shared machine does not decide a budget.
type Results map[string]map[string]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// Parse reads `go test -bench` output (plain or mixed with other lines)
// and keeps every benchmark result line's metrics. A benchmark that writes
// to stderr while it runs splits its line: go test prints the name before
// the run and the figures after it, with the benchmark's own lines in
// between, so figures without a name belong to the last name printed.
func Parse(r io.Reader) (Results, error) {
	all := map[string]map[string][]float64{}
	record := func(name string, m map[string]float64) {
		name = procSuffix.ReplaceAllString(name, "")
		if all[name] == nil {
			all[name] = map[string][]float64{}
		}
		for unit, v := range m {
			all[name][unit] = append(all[name][unit], v)
		}
	}
	pending := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) > 0 && strings.HasPrefix(f[0], "Benchmark"):
			if m, ok := figures(f[1:]); ok {
				record(f[0], m)
				pending = ""
			} else {
				pending = f[0]
			}
		case pending != "":
			if m, ok := figures(f); ok {
				record(pending, m)
				pending = ""
			}
		}
	}
	res := Results{}
	for name, m := range all {
		res[name] = map[string]float64{}
		for unit, vs := range m {
			res[name][unit] = median(vs)
		}
	}
	return res, sc.Err()
}

// figures parses what follows a result line's name: the iterations, then
// value-unit pairs.
func figures(f []string) (map[string]float64, bool) {
	if len(f) < 3 || len(f)%2 != 1 {
		return nil, false
	}
	if _, err := strconv.Atoi(f[0]); err != nil {
		return nil, false
	}
	m := map[string]float64{}
	for i := 1; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, false
		}
		m[f[i+1]] = v
	}
	return m, true
}

// median of vs (the mean of the middle two for an even count).
func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// Row is one budget with its figures; Missing says the run did not
// report it.
type Row struct {
	Budget
	Value, Base    float64
	HasBase        bool
	Missing, Met   bool
	Ratio, Abs     float64
	HasRatio, HasA bool
}

// Rows evaluates every budget against res.
func Rows(res Results, budgets []Budget) []Row {
	out := make([]Row, 0, len(budgets))
	for _, b := range budgets {
		r := Row{Budget: b}
		v, ok := res[b.Bench][b.Unit]
		if !ok {
			r.Missing = true
			out = append(out, r)
			continue
		}
		r.Value = v
		if b.Baseline != "" {
			bb := b.BaselineBench
			if bb == "" {
				bb = b.Bench
			}
			r.Base, r.HasBase = res[bb][b.Baseline]
		}
		if b.Figure != "" {
			r.Abs, r.HasA = res[b.Bench][b.Figure]
		}
		r.Met = true
		if b.MaxRatio != 0 || b.MinRatio != 0 {
			if r.HasBase && r.Base > 0 {
				r.Ratio, r.HasRatio = v/r.Base, true
				r.Met = (b.MaxRatio == 0 || r.Ratio <= b.MaxRatio) && (b.MinRatio == 0 || r.Ratio >= b.MinRatio)
			} else {
				r.Met = false
			}
		}
		if b.Max != 0 && v > b.Max {
			r.Met = false
		}
		if b.Min != 0 && v < b.Min {
			r.Met = false
		}
		out = append(out, r)
	}
	return out
}

func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Write prints the table: budget, limit, figure, baseline, verdict.
func Write(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "budget\tlimit\tfigure\tbaseline (same run)\t")
	for _, r := range rows {
		limit := "-"
		switch {
		case r.MaxRatio != 0:
			limit = "<= " + num(r.MaxRatio) + "x"
		case r.MinRatio != 0:
			limit = ">= " + num(r.MinRatio) + "x"
		case r.Max != 0:
			limit = "<= " + num(r.Max)
		case r.Min != 0:
			limit = ">= " + num(r.Min)
		}
		figure, base, verdict := "not measured", "", "MISSING"
		if !r.Missing {
			figure = num(r.Value)
			if r.HasRatio {
				figure = num(r.Ratio) + "x (" + num(r.Value) + " vs " + num(r.Base) + ")"
			}
			if r.HasA {
				figure += " (" + num(r.Abs) + ")"
			}
			if r.HasBase && !r.HasRatio {
				base = num(r.Base) + " " + r.Baseline
			}
			if r.HasRatio {
				base = cmp.Or(r.BaselineBench, r.Bench) + " " + r.Baseline
			}
			verdict = "ok"
			if !r.Met {
				verdict = "OVER"
			}
			if r.Max == 0 && r.Min == 0 && r.MaxRatio == 0 && r.MinRatio == 0 {
				verdict = ""
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, limit, figure, base, verdict)
	}
	return tw.Flush()
}
