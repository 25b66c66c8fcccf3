package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// startPprof serves Go's runtime profiles (heap, CPU, goroutines) on a
// loopback address of its own, never on the lab's listener: the footprint
// work profiles an idle lab through it, and a classroom's students must not
// reach it. Off unless --pprof is given.
func startPprof(addr string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("--pprof %s: only a loopback address is allowed (the profiles show the lab's memory)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %s: %w", addr, errors.Unwrap(err))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// The Host check keeps another site's page, its name rebound to
	// loopback, from reading the profiles.
	guard, err := httpguard.New(httpguard.Config{Listen: addr})
	if err != nil {
		ln.Close()
		return nil, err
	}
	// A per-write WriteTimeout: a 30 s CPU profile writes once it is
	// taken (http.Server's own WriteTimeout would refuse ?seconds= past it).
	srv, err := httpguard.NewServer(httpguard.ServerConfig{Handler: guard.Handler(mux)})
	if err != nil {
		ln.Close()
		return nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
