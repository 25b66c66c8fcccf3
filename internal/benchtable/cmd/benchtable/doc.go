// Command benchtable prints `make bench`'s budgets table from benchmark
// output; see package benchtable.
package main
