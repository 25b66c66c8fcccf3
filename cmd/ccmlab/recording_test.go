package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/server/replay"
)

// TestRecordingAfterServiceFlow: a recording downloaded right after a
// LoadBalancer Service got its EXTERNAL-IP holds that flow's frames (the
// base is taken when the lab is ready, not at the first download), and
// `ccmlab replay`'s loader takes it.
func TestRecordingAfterServiceFlow(t *testing.T) {
	needBinary(t)
	dataDir := t.TempDir()
	l := startProcess(t, dataDir, "--nodes", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := walkService(ctx, clientFor(t, dataDir)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + l.addr + "/api/recording")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/recording = %d %v\n%.500s", resp.StatusCode, err, rec)
	}
	var lines []struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	sc := bufio.NewScanner(bytes.NewReader(rec))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", len(lines)+1, err)
		}
		lines = append(lines, m)
	}
	if len(lines) <= 2 {
		t.Fatalf("the recording has %d lines (header and base only): the Service's flow is missing", len(lines))
	}
	var created, service bool
	for _, m := range lines[2:] {
		d := string(m.Data)
		created = created || (m.Type == "call" && strings.Contains(d, `"CreateLoadBalancer"`))
		service = service || (m.Type != "call" && strings.Contains(d, `"web"`))
	}
	if !created || !service {
		t.Errorf("the recording's %d frames lack the flow: CreateLoadBalancer call %v, a frame of Service web %v", len(lines)-2, created, service)
	}
	info, err := replay.Check(rec)
	if err != nil {
		t.Fatalf("replay.Check: %v", err)
	}
	if info.Frames != len(lines)-2 {
		t.Errorf("replay.Check counts %d frames, the file has %d", info.Frames, len(lines)-2)
	}
}
