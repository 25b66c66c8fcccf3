package labclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/server"
	"github.com/ccmlab/ccmlab/server/hub"
	"github.com/ccmlab/ccmlab/server/stream"
)

func newClient(t *testing.T, h http.Handler, token string) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name, addr, wantErr string
	}{
		{"host and port", "127.0.0.1:8080", ""},
		{"a name", "lab-alice.class.svc:8080", ""},
		{"no address", "", "address is required"},
		{"no port", "127.0.0.1", "not host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Addr: tc.addr})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("New(%q): %v, want an error saying %q", tc.addr, err, tc.wantErr)
			}
		})
	}
}

// request is what the fake lab received.
type request struct {
	method, path, auth, contentType, body string
}

// TestCalls: each call sends the method, path, token and body the lab's
// API takes, and reads the answer into the lab's own type.
func TestCalls(t *testing.T) {
	faults := cloud.Faults{Deny: []string{"CreateLoadBalancer"}, Latency: cloud.Duration{Duration: time.Second}, QPS: 5, Burst: 5}
	detail := exercises.Detail{
		Summary:     exercises.Summary{ID: exercises.MysteryID, Title: "Diagnose"},
		CurrentStep: "name",
		MysteryView: &exercises.MysteryView{Causes: []exercises.CauseView{{ID: "iam-deny", Label: i18n.Text{JA: "拒否", EN: "deny"}}}},
	}
	list := []exercises.Summary{{ID: "node-init", Steps: 3, StepsPassed: 1, WrongAnswers: 2}}

	var mu sync.Mutex
	var got []request
	lab := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		var answer any
		switch {
		case r.URL.Path == "/healthz":
			_, _ = io.WriteString(w, "ok")
			return
		case r.URL.Path == "/api/exercises":
			answer = list
		case strings.HasPrefix(r.URL.Path, "/api/exercises/"):
			answer = detail
		case r.URL.Path == "/api/cloud/faults" && r.Method == http.MethodPut:
			var f cloud.Faults
			_ = json.Unmarshal(b, &f)
			answer = f
		case r.URL.Path == "/api/cloud/faults":
			answer = faults
		}
		_ = json.NewEncoder(w).Encode(answer)
	})
	c := newClient(t, lab, "secret-token")
	ctx := context.Background()

	withLatency := faults
	withLatency.Latency = cloud.Duration{Duration: 2 * time.Second}
	for _, tc := range []struct {
		name string
		call func() (any, error)
		want any
		sent []request
	}{
		{"healthy", func() (any, error) { return nil, c.Healthy(ctx) }, nil,
			[]request{{"GET", "/healthz", "Bearer secret-token", "", ""}}},
		{"exercises", func() (any, error) { return c.Exercises(ctx) }, list,
			[]request{{"GET", "/api/exercises", "Bearer secret-token", "", ""}}},
		{"an exercise, its id escaped", func() (any, error) { return c.Exercise(ctx, "a b") }, detail,
			[]request{{"GET", "/api/exercises/a%20b", "Bearer secret-token", "", ""}}},
		{"a reset with a cause", func() (any, error) {
			return c.Reset(ctx, exercises.MysteryID, exercises.ResetOptions{Cause: "iam-deny"})
		}, detail,
			[]request{{"POST", "/api/exercises/mystery-pending/reset", "Bearer secret-token", "application/json", `{"cause":"iam-deny"}`}}},
		{"a reset without options sends an empty object", func() (any, error) {
			return c.Reset(ctx, "node-init", exercises.ResetOptions{})
		}, detail,
			[]request{{"POST", "/api/exercises/node-init/reset", "Bearer secret-token", "application/json", `{}`}}},
		{"faults", func() (any, error) { return c.Faults(ctx) }, faults,
			[]request{{"GET", "/api/cloud/faults", "Bearer secret-token", "", ""}}},
		{"latency keeps the other faults", func() (any, error) { return c.SetLatency(ctx, 2*time.Second) }, withLatency,
			[]request{
				{"GET", "/api/cloud/faults", "Bearer secret-token", "", ""},
				{"PUT", "/api/cloud/faults", "Bearer secret-token", "application/json", `{"deny":["CreateLoadBalancer"],"latency":"2s","qps":5,"burst":5}`},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			res, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(res, tc.want) {
				t.Errorf("answer %+v, want %+v", res, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(got, tc.sent) {
				t.Errorf("the lab received\n%+v\nwant\n%+v", got, tc.sent)
			}
		})
	}

	t.Run("no token, no header", func(t *testing.T) {
		open := newClient(t, lab, "")
		mu.Lock()
		got = nil
		mu.Unlock()
		if err := open.Healthy(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].auth != "" {
			t.Errorf("received %+v, want one request without Authorization", got)
		}
	})
}

// TestErrors: a refusal is an *Error with the lab's status and message,
// whatever the body.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter)
		wantCode int
		wantMsg  string
		notFound bool
	}{
		{"the lab's error body", func(w http.ResponseWriter) {
			httpguard.WriteError(w, http.StatusNotFound, "no exercise \"x\"")
		}, 404, `no exercise "x"`, true},
		{"a conflict", func(w http.ResponseWriter) {
			httpguard.WriteError(w, http.StatusConflict, "reset mystery-pending first")
		}, 409, "reset mystery-pending first", false},
		{"a text body (a proxy's)", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "  upstream down\n")
		}, 502, "upstream down", false},
		{"JSON without an error field", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"message":"old shape"}`)
		}, 400, `{"message":"old shape"}`, false},
		{"no body", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, 503, "Service Unavailable", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.answer(w) }), "")
			_, err := c.Exercise(context.Background(), "x")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *Error", err, err)
			}
			if e.Code != tc.wantCode || e.Message != tc.wantMsg || e.Method != "GET" || e.Path != "/api/exercises/x" {
				t.Errorf("%+v, want code %d, message %q", e, tc.wantCode, tc.wantMsg)
			}
			if IsNotFound(err) != tc.notFound {
				t.Errorf("IsNotFound = %v, want %v", IsNotFound(err), tc.notFound)
			}
		})
	}

	t.Run("an answer of another shape", func(t *testing.T) {
		c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"id": 3}`)
		}), "")
		_, err := c.Exercises(context.Background())
		if err == nil || !strings.Contains(err.Error(), "not what this ccmlab reads") {
			t.Fatalf("%v, want a decoding error", err)
		}
	})
}

// TestStream: the stream carries the lab's envelopes with the token, and
// a refused handshake is an *Error like any other refusal.
func TestStream(t *testing.T) {
	msgs := []hub.Message{
		{Seq: 1, Type: stream.TypeSnapshot, Data: json.RawMessage(`{}`)},
		{Seq: 2, Type: stream.TypeExercise, Data: json.RawMessage(`{"exercise":"node-init"}`)},
		{Seq: 3, Type: hub.TypeResync},
	}
	lab := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret-token" {
			httpguard.WriteError(w, http.StatusUnauthorized, "this lab needs its token")
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for _, m := range msgs {
			b, _ := json.Marshal(m)
			if conn.Write(r.Context(), websocket.MessageText, b) != nil {
				return
			}
		}
		_, _, _ = conn.Read(r.Context()) // until the client goes
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st, err := newClient(t, lab, "secret-token").Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, want := range msgs {
		m, err := st.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != want.Seq || m.Type != want.Type || string(m.Data) != string(want.Data) {
			t.Errorf("message %+v, want %+v", m, want)
		}
	}

	_, err = newClient(t, lab, "wrong").Stream(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Code != http.StatusUnauthorized || e.Message != "this lab needs its token" {
		t.Fatalf("a refused stream: %v, want a 401 *Error with the lab's message", err)
	}
}

// TestAgainstServer: every path and method the client uses is a route of
// the lab's own server. A lab that is starting answers them all 503 "the
// lab is starting"; a path or method the server lacks would answer 404 or
// 405 instead.
func TestAgainstServer(t *testing.T) {
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler), Token: "a-token-of-16-chars-or-more"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv, "a-token-of-16-chars-or-more")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"healthz", func() error { return c.Healthy(ctx) }},
		{"exercises", func() error { _, err := c.Exercises(ctx); return err }},
		{"an exercise", func() error { _, err := c.Exercise(ctx, exercises.MysteryID); return err }},
		{"a reset", func() error {
			_, err := c.Reset(ctx, exercises.MysteryID, exercises.ResetOptions{Cause: "iam-deny"})
			return err
		}},
		{"faults", func() error { _, err := c.Faults(ctx); return err }},
		{"set faults", func() error { _, err := c.SetFaults(ctx, cloud.Faults{}); return err }},
		{"stream", func() error { _, err := c.Stream(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *Error
			if !errors.As(err, &e) || e.Code != http.StatusServiceUnavailable || e.Message != "the lab is starting" {
				t.Fatalf("%v, want the starting lab's 503", err)
			}
		})
	}
	srv.SetReady(true)
	if err := c.Healthy(ctx); err != nil {
		t.Errorf("a ready lab: %v", err)
	}
}
