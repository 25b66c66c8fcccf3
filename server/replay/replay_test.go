package replay

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/server/hub"
)

// recordFromHub makes a recording the way a lab does: a hub with a
// recording, a few published messages, GET /api/recording.
func recordFromHub(t *testing.T, n int) []byte {
	t.Helper()
	h, err := hub.New(hub.Config{
		Epoch: "e1", RecordEvery: 4, ReplaySize: 64, Logger: slog.New(slog.DiscardHandler),
		Snapshot: func(context.Context) (any, error) { return map[string]any{"epoch": "e1"}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close(context.Background()) }()
	for i := range n {
		if _, err := h.Publish("node", map[string]any{"type": "node", "op": "upsert", "key": "n", "data": map[string]any{"name": "n", "i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeRecording(rec, httptest.NewRequest(http.MethodGet, "/api/recording", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("recording: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func TestCheck(t *testing.T) {
	good := string(recordFromHub(t, 10))
	lines := strings.Split(strings.TrimSpace(good), "\n")
	const ts = `"time":"2026-07-01T12:00:00Z"`
	tests := []struct {
		name    string
		rec     string
		wantErr string
	}{
		{"from a hub", good, ""},
		{"without header", strings.Join(lines[1:], "\n"), ""},
		{"only a snapshot", `{"seq":3,"type":"snapshot",` + ts + `,"data":{}}`, ""},
		{"empty", "", "no snapshot"},
		{"not JSON", "hello\n", "line 1 is not a stream message"},
		{"frame first", `{"seq":1,"type":"node",` + ts + `}`, "starts with a snapshot"},
		{"no seq", `{"type":"snapshot",` + ts + `}`, "lacks seq"},
		{"gap", `{"seq":3,"type":"snapshot",` + ts + `}` + "\n" + `{"seq":5,"type":"node",` + ts + `}`, "gap"},
		{"two snapshots", `{"seq":3,"type":"snapshot",` + ts + `}` + "\n" + `{"seq":3,"type":"snapshot",` + ts + `}`, "a second"},
		{"time backwards", `{"seq":3,"type":"snapshot",` + ts + `}` + "\n" + `{"seq":4,"type":"node","time":"2026-07-01T11:00:00Z"}`, "before"},
		{"other version", `{"seq":0,"type":"recording",` + ts + `,"data":{"version":99}}` + "\n" + `{"seq":3,"type":"snapshot",` + ts + `}`, "version 99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Check([]byte(tt.rec))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check = %+v, %v; want an error about %q", info, err, tt.wantErr)
			}
		})
	}
	info, err := Check([]byte(good))
	if err != nil || info.Epoch != "e1" || info.LastSeq != 10 || info.Frames != int(info.LastSeq-info.BaseSeq) {
		t.Fatalf("info %+v, %v", info, err)
	}
}

func TestServer(t *testing.T) {
	rec := recordFromHub(t, 5)
	srv, err := New(Config{Recording: rec, Name: "demo.ndjson", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/healthz", 200, "ok"},
		{"GET", "/api/recording", 200, string(rec)},
		{"GET", "/api/recording?since=3", 400, "since is not supported"},
		{"POST", "/api/recording", 405, "not allowed"},
		{"GET", "/ws", 404, "no lab"},
		{"GET", "/api/state", 404, "no lab"},
		{"POST", "/api/cloud/instances", 404, "no lab"},
		{"GET", "/?lang=en", 200, `data-mode="replay"`},
		{"GET", "http://evil.example:8080/", 421, "is not this server's"},
		{"GET", "/?lang=ja&lang=en", 400, "given 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			target := tt.path
			if strings.HasPrefix(target, "/") {
				target = "http://127.0.0.1:8080" + target // httptest's example.com is not the replay's
			}
			srv.ServeHTTP(w, httptest.NewRequest(tt.method, target, nil))
			b, _ := io.ReadAll(w.Result().Body)
			if w.Code != tt.code || !strings.Contains(string(b), tt.body) {
				t.Fatalf("%s %s = %d %.200s; want %d with %q", tt.method, tt.path, w.Code, b, tt.code, tt.body)
			}
		})
	}
}

func TestNewRefusesBadRecordings(t *testing.T) {
	for _, rec := range []string{"", "{}", `{"seq":1,"type":"node","time":"2026-07-01T12:00:00Z"}`} {
		if _, err := New(Config{Recording: []byte(rec), Name: "x.ndjson"}); err == nil {
			t.Errorf("New accepted %q", rec)
		}
	}
}
