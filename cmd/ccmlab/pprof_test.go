package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestStartPprof(t *testing.T) {
	for _, tc := range []struct {
		name, addr, wantErr string
	}{
		{"off", "", ""},
		{"not loopback", "0.0.0.0:0", "only a loopback address"},
		{"no port", "127.0.0.1", "missing port"},
		{"loopback", "127.0.0.1:0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, err := startPprof(tc.addr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("startPprof(%q) = %v, want an error saying %q", tc.addr, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stop()
		})
	}
}

func TestPprofServesProfiles(t *testing.T) {
	// A fixed free port is needed to reach it; take one from the kernel.
	addr := freeAddr(t)
	stop, err := startPprof(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET heap: %s\n%.200s", resp.Status, body)
	}
}
