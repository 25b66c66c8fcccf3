// Package benchtable turns `go test -bench` output into the one table
// `make bench` prints: each budget, its figure, and the baseline the
// figure is a ratio of, measured in the same run.
//
// The budgets live in one place (budgets.go). A benchmark anywhere in the
// module joins the table by reporting a metric with b.ReportMetric and
// having a Budget name its benchmark and unit; the Makefile's bench target
// only has to run it.
package benchtable
