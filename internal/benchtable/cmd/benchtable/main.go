package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ccmlab/ccmlab/internal/benchtable"
)

func main() {
	scale := flag.Bool("scale", false, "print only the 1,000 x 1,000 convergence line")
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		var rs []io.Reader
		for _, p := range flag.Args() {
			f, err := os.Open(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchtable:", err)
				os.Exit(2)
			}
			defer f.Close()
			rs = append(rs, f)
		}
		in = io.MultiReader(rs...)
	}
	var raw strings.Builder
	if *scale {
		// The AWS API bill's table lines are printed as they came.
		in = io.TeeReader(in, &raw)
	}
	res, err := benchtable.Parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	if *scale {
		if !printScale(os.Stdout, res, raw.String()) {
			os.Exit(1)
		}
		return
	}
	if err := benchtable.Write(os.Stdout, benchtable.Rows(res, benchtable.Budgets)); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
}

// printScale prints the scale runs' lines: the 1,000 x 1,000 convergence
// on the aws profile with cloud-provider-aws (the median of the runs), its
// AWS API calls per Service and per node, and the per-action table of its
// last run as the benchmark printed it. It reports whether that run was
// there at all.
func printScale(w io.Writer, res benchtable.Results, raw string) bool {
	runs := 0
	var last []string // the last 1,000 x 1,000 run's table
	in := false
	for _, line := range strings.Split(raw, "\n") {
		if !strings.HasPrefix(line, "scale: aws api ") {
			continue
		}
		rest := strings.TrimPrefix(line, "scale: aws api ")
		switch {
		case strings.HasPrefix(rest, "1000x1000 ("):
			runs++
			last, in = []string{line}, true
		case strings.HasPrefix(rest, "100x100 ("):
			in = false
		case in:
			last = append(last, line)
		}
	}
	m, ok := res["BenchmarkScaleAWS/1000x1000"]
	if !ok {
		fmt.Fprintln(w, "scale: 1000 nodes x 1000 services did not converge (no BenchmarkScaleAWS/1000x1000 result)")
		return false
	}
	fmt.Fprintf(w, "scale: 1000 nodes x 1000 services converged in %.1f s (Classic ELBs, cloud-provider-aws, Lease every %g s; median of %d runs)\n",
		m["converge-s"], m["lease-renew-s"], max(runs, 1))
	fmt.Fprintf(w, "scale: aws api calls per service: %.1f\n", m["aws-calls/service"])
	fmt.Fprintf(w, "scale: aws api calls per node: %.1f\n", m["aws-calls/node"])
	if k := m["kwok-nodes/s"]; k > 0 {
		fmt.Fprintf(w, "scale: nodes joined and initialized per s: %.1f (KWOK on the same apiserver: %.1f)\n", m["nodes/s"], k)
	}
	if small, ok := res["BenchmarkScaleAWS/100x100"]; ok && small["ms/service"] > 0 && small["ms/node"] > 0 {
		fmt.Fprintf(w, "scale: cost 1000 / 100: per service %.2fx, per node %.2fx (budget 1.5x)\n",
			m["ms/service"]/small["ms/service"], m["ms/node"]/small["ms/node"])
	}
	if own, ok := res["BenchmarkScale/1000x1000"]; ok {
		fmt.Fprintf(w, "scale: the lab's own provider: 1000 nodes x 1000 services converged in %.1f s\n", own["converge-s"])
	}
	for _, line := range last {
		fmt.Fprintln(w, line)
	}
	return true
}
