package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/server/hub"
)

// fullRecording writes a recording as big as a lab keeps by default: a
// base snapshot of a busy lab and a full ring (4096 frames) after it.
func fullRecording(b *testing.B) string {
	b.Helper()
	nodes := make([]map[string]any, 50)
	for i := range nodes {
		nodes[i] = map[string]any{"name": fmt.Sprintf("ip-10-0-0-%d", i), "ready": "True", "taints": []string{}, "zone": "ap-northeast-1a", "podCIDR": fmt.Sprintf("10.244.%d.0/24", i)}
	}
	snap := map[string]any{"epoch": "bench", "nodes": nodes, "pods": make([]map[string]any, 0), "serviceFlows": []any{}, "nodeFlows": []any{}}
	h, err := hub.New(hub.Config{Epoch: "bench", RecordEvery: hub.DefaultRecordEvery, Logger: slog.New(slog.DiscardHandler),
		Snapshot: func(context.Context) (any, error) { return snap, nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = h.Close(context.Background()) }()
	for i := range hub.DefaultReplaySize + hub.DefaultRecordEvery {
		n := nodes[i%len(nodes)]
		if _, err := h.Publish("node", map[string]any{"type": "node", "op": "upsert", "key": n["name"], "data": n, "pad": strings.Repeat("x", 600)}); err != nil {
			b.Fatal(err)
		}
	}
	// Let the last base in, as a lab's would be.
	deadline := time.Now().Add(10 * time.Second)
	var rec *httptest.ResponseRecorder
	for {
		rec = httptest.NewRecorder()
		h.ServeRecording(rec, httptest.NewRequest(http.MethodGet, "/api/recording", nil))
		if rec.Code == http.StatusOK && strings.Count(rec.Body.String(), "\n") >= hub.DefaultReplaySize-hub.DefaultRecordEvery || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec.Code != http.StatusOK {
		b.Fatalf("recording: %d %s", rec.Code, rec.Body)
	}
	path := filepath.Join(b.TempDir(), "bench.ndjson")
	if err := os.WriteFile(path, rec.Body.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReplayStart starts `ccmlab replay` on a full-size recording and
// measures the time from exec to the first 200 from /healthz (the issue
// asks for about a second), and the process's RSS once it has served the
// page and the recording. Budget: start under 1 s.
func BenchmarkReplayStart(b *testing.B) {
	needBinary(b)
	file := fullRecording(b)
	st, _ := os.Stat(file)
	const rounds = 5
	var starts []time.Duration
	var rss int64
	for range b.N {
		for range rounds {
			d, r := replayStartOnce(b, file)
			starts = append(starts, d)
			rss = max(rss, r)
		}
	}
	b.ReportMetric(float64(median(starts).Microseconds())/1000, "start-ms")
	b.ReportMetric(float64(rss)/1024, "RSS-MB")
	b.ReportMetric(float64(st.Size())/(1<<20), "recording-MB")
	b.Logf("median of %d: /healthz after %s; RSS %d MB after serving a %.1f MB recording (budget: start < 1s)",
		len(starts), median(starts), rss/1024, float64(st.Size())/(1<<20))
}

func replayStartOnce(b *testing.B, file string) (time.Duration, int64) {
	b.Helper()
	// The port freeAddrB found free can be taken again before the child
	// binds it (the kernel hands it out as a client's source port); that
	// run measured nothing, so it gets a new port rather than failing the
	// whole bench.
	for attempt := 1; ; attempt++ {
		took, rss, out, err := tryReplayStart(b, file)
		if err == nil {
			return took, rss
		}
		if strings.Contains(out, "address already in use") && attempt < 3 {
			b.Logf("attempt %d: %v; again on another port", attempt, err)
			continue
		}
		b.Fatalf("%v\n%s", err, out)
	}
}

// tryReplayStart execs `ccmlab replay` once and times its first 200 from
// /healthz. On failure it returns what the process printed.
func tryReplayStart(b *testing.B, file string) (time.Duration, int64, string, error) {
	addr := freeAddrB(b)
	cmd := exec.Command(binary, "replay", file, "--listen", addr)
	// One writer for both streams, read only after Wait: exec then writes
	// from one goroutine at a time.
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	}()
	var took time.Duration
	for {
		select {
		case err := <-exited:
			waited = true
			return 0, 0, out.String(), fmt.Errorf("ccmlab replay exited before it answered /healthz: %v", err)
		default:
		}
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				took = time.Since(begin)
				break
			}
		}
		if time.Since(begin) > 30*time.Second {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			waited = true
			return 0, 0, out.String(), fmt.Errorf("ccmlab replay did not answer /healthz within 30s: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, p := range []string{"/", "/api/recording"} {
		res, err := http.Get("http://" + addr + p)
		if err != nil {
			return 0, 0, "", err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return took, rssKB(cmd.Process.Pid), "", nil
}

func freeAddrB(b *testing.B) string {
	b.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
