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
		m, ok := res["BenchmarkScale/1000x1000"]
		if !ok {
			fmt.Println("scale: 1000 nodes x 1000 services did not converge (no result)")
			os.Exit(1)
		}
		fmt.Printf("scale: 1000 nodes x 1000 services converged in %.1f s\n", m["converge-s"])
		if m, ok := res["BenchmarkScaleAWS/1000x1000"]; ok {
			fmt.Printf("scale: 1000 nodes x 1000 Classic ELB services (cloud-provider-aws) converged in %.1f s\n", m["converge-s"])
			fmt.Printf("scale: aws api calls per service: %.1f\n", m["aws-calls/service"])
			fmt.Printf("scale: aws api calls per node: %.1f\n", m["aws-calls/node"])
			for _, line := range strings.Split(raw.String(), "\n") {
				if strings.HasPrefix(line, "scale: aws api ") {
					fmt.Println(line)
				}
			}
		} else {
			fmt.Println("scale: aws api calls: no BenchmarkScaleAWS/1000x1000 result")
		}
		return
	}
	if err := benchtable.Write(os.Stdout, benchtable.Rows(res, benchtable.Budgets)); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
}
