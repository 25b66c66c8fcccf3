package main

import (
	"flag"
	"fmt"
	"os"

	"golang.org/x/tools/go/packages"
)

func main() {
	goos := flag.String("os", "darwin", "the GOOS to check for")
	goarch := flag.String("arch", "arm64", "the GOARCH to check for")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crosscheck [-os GOOS] [-arch GOARCH] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	// Cross builds have no cgo, so the files a darwin build would compile
	// are the ones CGO_ENABLED=0 selects.
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax,
		Env:  append(os.Environ(), "GOOS="+*goos, "GOARCH="+*goarch, "CGO_ENABLED=0"),
	}
	pkgs, err := packages.Load(cfg, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crosscheck:", err)
		os.Exit(1)
	}
	n := 0
	packages.Visit(pkgs, nil, func(*packages.Package) { n++ })
	if packages.PrintErrors(pkgs) > 0 {
		os.Exit(1)
	}
	fmt.Printf("%s/%s: %d packages type-check\n", *goos, *goarch, n)
}
