//go:build !unit

package exercises_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/server"
)

// The done-when check of a full data dir, on the served lab behind the
// lab's HTTP API: with the data dir's disk full an exercise reset answers
// 507, says what is full and that nothing changed (in Japanese with
// ?lang=ja), changes nothing; the lab keeps answering /healthz (200,
// degraded) and the exercise; once there is room again /healthz says ok
// and the same reset goes through, without a restart.
func TestResetOnFullDataDir(t *testing.T) {
	const id = "routes"
	lab, svc, cp := exercises.ServedWorld(t, id)
	ctx := context.Background()
	disk := &datafs.Switch{}
	dir := t.TempDir()
	srv, err := server.New(server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DataDir: dir, Files: disk})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetLab(&server.Lab{
		Profile: lab.Config.Profile, Cloud: lab.Cloud, Controllers: lab.Manager, Flow: lab.Observer,
		Exercises: svc, Epoch: "test", Client: lab.Client,
		EtcdSpace: func() (bool, string) { s := cp.EtcdSpace(); return s.Full, s.Reason },
	})
	srv.SetReady(true)
	do := func(method, path string) (int, string) {
		t.Helper()
		r := httptest.NewRequest(method, path, nil)
		r.Host = "localhost:8080"
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	before, err := svc.Get(ctx, id, "en")
	if err != nil {
		t.Fatal(err)
	}
	instances := len(lab.Cloud.Snapshot().Instances)

	disk.SetFull(true)
	for _, tc := range []struct {
		lang string
		want []string
	}{
		{"", []string{"data dir full: " + dir, "Nothing was changed", "takes changes again by itself"}},
		{"ja", []string{"data dir full: " + dir, "何も変更していません", "自動で変更を受け付けます"}},
	} {
		t.Run("reset refused "+tc.lang, func(t *testing.T) {
			path := "/api/exercises/" + id + "/reset"
			if tc.lang != "" {
				path += "?lang=" + tc.lang
			}
			code, body := do("POST", path)
			if code != http.StatusInsufficientStorage {
				t.Fatalf("POST %s on a full disk = %d %s, want 507", path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("POST %s: %s, want it to say %q", path, body, w)
				}
			}
			after, err := svc.Get(ctx, id, "en")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("a refused reset changed the exercise:\nbefore %+v\nafter  %+v", before, after)
			}
			if n := len(lab.Cloud.Snapshot().Instances); n != instances {
				t.Errorf("a refused reset changed the cloud: %d instances, before %d", n, instances)
			}
		})
	}
	for _, tc := range []struct{ path, want string }{
		{"/healthz", "degraded: data dir full: " + dir},
		{"/api/exercises/" + id, `"id":"` + id + `"`},
	} {
		if code, body := do("GET", tc.path); code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s on a full disk = %d %.200s, want 200 with %q", tc.path, code, body, tc.want)
		}
	}

	disk.SetFull(false)
	testutil.Eventually(t, 10*time.Second, "/healthz to say ok once the disk has room", func() (bool, string) {
		_, body := do("GET", "/healthz")
		return body == "ok", body
	})
	begin := time.Now()
	if code, body := do("POST", "/api/exercises/"+id+"/reset"); code != http.StatusOK {
		t.Fatalf("reset once the disk has room = %d %.300s", code, body)
	}
	t.Logf("the reset after the disk had room took %s", time.Since(begin).Round(time.Millisecond))
	after, err := svc.Get(ctx, id, "en")
	if err != nil {
		t.Fatal(err)
	}
	if !after.StartedAt.After(before.StartedAt) || after.Reset != nil {
		t.Errorf("after the reset: started %s (before %s), reset note %+v", after.StartedAt, before.StartedAt, after.Reset)
	}
}
