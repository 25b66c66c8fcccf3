package server

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
)

// apiserverEtcdFull is what client-go returns for a write the apiserver could
// not store because etcd's database is full: the apiserver's Status, code
// 500, no reason, etcd's text as its message (datafs.EtcdNoSpace).
func apiserverEtcdFull() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: datafs.EtcdNoSpace}}
}

// isWrite: the verbs etcd refuses while it is full (deletions pass).
func isWrite(a k8stesting.Action) bool {
	switch a.GetVerb() {
	case "create", "update", "patch":
		return true
	}
	return false
}

// fullCluster makes l's cluster answer writes as the apiserver does while
// etcd's database is full: every write while full is set, and with
// probeOK the space probe's ConfigMap still passes (etcd full in the
// middle of a reset that found room when it began).
type fullCluster struct {
	full, probeOK atomic.Bool
}

func (f *fullCluster) install(l *cheapLab) {
	l.client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !f.full.Load() || !isWrite(a) {
			return false, nil, nil
		}
		if f.probeOK.Load() && a.GetResource().Resource == "configmaps" {
			return false, nil, nil
		}
		return true, nil, apiserverEtcdFull()
	})
	l.ctrl.fail = func() error {
		if f.full.Load() {
			return apiserverEtcdFull()
		}
		return nil
	}
}

// refusal is how a write route answers while a store is full: 507, or
// (writes none) whatever it answers otherwise.
type refusal struct {
	route
	refused bool
}

// fullRoutes is every mutating route (mutatingRoutes, which the bad-input
// suite also walks) with whether it writes into a full data dir, and
// whether into a full etcd. A route not refused writes into neither: step
// mode and requests are in memory, the console answers with kubectl's own
// output.
func fullRoutes(inst string) (dataDir, etcd []refusal) {
	for _, rt := range mutatingRoutes(inst) {
		p := strings.TrimPrefix(rt.path, "/api")
		memory := strings.HasPrefix(p, "/cloud/stepmode") || p == "/requests" || p == "/console"
		cluster := strings.HasPrefix(p, "/controllers/") || strings.HasSuffix(p, "/reset") || p == "/lab/restart"
		dataDir = append(dataDir, refusal{rt, !memory})
		etcd = append(etcd, refusal{rt, cluster})
	}
	return dataDir, etcd
}

// assertRefused: rt answers 507 with a message that says what is full and
// that nothing changed, in the language asked for, and the lab is as it
// was.
func assertRefused(t *testing.T, l *cheapLab, rt route, lang string, what ...string) {
	t.Helper()
	before := l.state(t)
	path := rt.path
	if lang != "" {
		path += "?lang=" + lang
	}
	hdr := map[string]string{}
	if rt.body != "" {
		hdr["Content-Type"] = "application/json"
	}
	rec := l.serve(badCase{method: rt.method, path: path, body: rt.body, header: hdr})
	if rec.Code != http.StatusInsufficientStorage {
		t.Fatalf("%s %s = %d %s, want 507", rt.method, path, rec.Code, rec.Body)
	}
	for _, w := range what {
		if !strings.Contains(rec.Body.String(), w) {
			t.Errorf("%s %s: %s, want it to say %q", rt.method, path, rec.Body, w)
		}
	}
	if after := l.state(t); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused %s %s changed the lab:\nbefore %+v\nafter  %+v", rt.method, path, before, after)
	}
}

// TestFullStores walks every mutating route with the data dir's disk full,
// then with etcd's database full: each route that writes there answers
// 507 (in Japanese with ?lang=ja), changes nothing, /healthz says why and
// the lab recovers once there is room; each route that does not is not
// refused.
func TestFullStores(t *testing.T) {
	disk := &datafs.Switch{}
	l := newCheapLabOn(t, "", disk)
	var etcd fullCluster
	etcd.install(l)
	dataRoutes, etcdRoutes := fullRoutes(l.inst.ID)
	dir := l.srv.cfg.DataDir
	health := func() string {
		t.Helper()
		rec := l.serve(badCase{method: "GET", path: "/healthz"})
		if rec.Code != http.StatusOK {
			t.Fatalf("/healthz = %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	notRefused := func(t *testing.T, rt route) {
		t.Helper()
		hdr := map[string]string{}
		if rt.body != "" {
			hdr["Content-Type"] = "application/json"
		}
		if rec := l.serve(badCase{method: rt.method, path: rt.path, body: rt.body, header: hdr}); rec.Code == http.StatusInsufficientStorage {
			t.Fatalf("%s %s writes into neither store but answered 507 %s", rt.method, rt.path, rec.Body)
		}
	}
	// The routes that are refused first, then those that are not (which
	// may change the lab: step mode goes on).
	walk := func(t *testing.T, routes []refusal, lang string, what ...string) {
		for _, r := range routes {
			if r.refused {
				t.Run("refused "+r.method+" "+r.path, func(t *testing.T) { assertRefused(t, l, r.route, lang, what...) })
			}
		}
		for _, r := range routes {
			if !r.refused {
				t.Run("goes on "+r.method+" "+r.path, func(t *testing.T) { notRefused(t, r.route) })
			}
		}
		l.cloud.SetStepMode(false)
	}

	t.Run("data dir", func(t *testing.T) {
		disk.SetFull(true)
		// A reset probes the disk before it starts: refused, though no
		// write has met the full disk yet.
		assertRefused(t, l, route{method: "POST", path: "/api/exercises/node-init/reset", body: `{}`}, "",
			"data dir full: "+dir, "Nothing was changed", "by itself")
		if h := health(); h != "degraded: data dir full: "+dir {
			t.Fatalf("/healthz on a full disk = %q", h)
		}
		walk(t, dataRoutes, "", "data dir full: "+dir, "Nothing was changed")
		t.Run("in Japanese", func(t *testing.T) {
			assertRefused(t, l, route{method: "POST", path: "/api/exercises/review/quiz/q1", body: `{"choice":0}`}, "ja",
				"data dir full: "+dir, "ディスクがいっぱい", "何も変更していません")
		})
		disk.SetFull(false)
		testutil.Eventually(t, 10*time.Second, "the lab to recover once the disk has room", func() (bool, string) {
			h := health()
			return h == "ok", h
		})
	})

	t.Run("etcd", func(t *testing.T) {
		etcd.full.Store(true)
		// The first write to meet it: a controller switch, whose
		// DaemonSet update the apiserver refused.
		assertRefused(t, l, route{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`}, "",
			"etcd", datafs.EtcdNoSpace, "Nothing was changed", "by itself")
		if h := health(); h != "degraded: "+etcdFullMsg+datafs.EtcdNoSpace {
			t.Fatalf("/healthz with etcd full = %q", h)
		}
		walk(t, etcdRoutes, "", datafs.EtcdNoSpace, "Nothing was changed")
		t.Run("in Japanese", func(t *testing.T) {
			assertRefused(t, l, route{method: "POST", path: "/api/exercises/node-init/reset", body: `{}`}, "ja",
				"クラスタのデータベース (etcd) がいっぱい", "何も変更していません")
		})
		etcd.full.Store(false)
		testutil.Eventually(t, 10*time.Second, "the lab to recover once etcd takes writes", func() (bool, string) {
			h := health()
			return h == "ok", h
		})
		if rec := l.serve(badCase{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`,
			header: map[string]string{"Content-Type": "application/json"}}); rec.Code != http.StatusOK {
			t.Fatalf("a switch once etcd has room = %d %s", rec.Code, rec.Body)
		}
		if probes, _ := l.client.CoreV1().ConfigMaps(probeNamespace).List(t.Context(), metav1.ListOptions{}); len(probes.Items) != 0 {
			t.Errorf("the space probe left %d ConfigMaps behind", len(probes.Items))
		}
	})

	t.Run("etcd full in the middle of a reset", func(t *testing.T) {
		// The probe found room; the reset's first write to the cluster
		// did not: it stopped part way, and says so.
		etcd.full.Store(true)
		etcd.probeOK.Store(true)
		t.Cleanup(func() { etcd.full.Store(false); etcd.probeOK.Store(false) })
		rec := l.serve(badCase{method: "POST", path: "/api/exercises/node-init/reset", body: `{}`,
			header: map[string]string{"Content-Type": "application/json"}})
		if rec.Code != http.StatusInsufficientStorage || !strings.Contains(rec.Body.String(), "The reset stopped part way") {
			t.Fatalf("reset meeting a full etcd = %d %s, want 507 saying it stopped part way", rec.Code, rec.Body)
		}
		d, err := l.ex.Get(t.Context(), "node-init", "en")
		if err != nil {
			t.Fatal(err)
		}
		if d.Reset == nil || d.Reset.State != progress.ResetFailed || !strings.Contains(d.Reset.Note, datafs.EtcdNoSpace) {
			t.Errorf("the exercise after the stopped reset: %+v, want its reset failed with etcd's answer", d.Reset)
		}
		if _, err := l.ex.Check(t.Context(), "node-init", "en"); !errors.Is(err, exercises.ErrUnavailable) {
			t.Errorf("check after a stopped reset: %v, want it refused until a reset goes through", err)
		}
	})
}

// TestConsoleSeesFullEtcd: the console answers with what kubectl printed,
// and when that is etcd's "database space exceeded" the lab knows, so the
// page's banner shows; a probe that finds room clears it.
func TestConsoleSeesFullEtcd(t *testing.T) {
	l := newCheapLab(t, "")
	var etcd fullCluster
	etcd.install(l)
	etcd.full.Store(true)
	l.srv.noteConsoleOutput("Error from server: " + datafs.EtcdNoSpace + "\n")
	rec := l.serve(badCase{method: "GET", path: "/healthz"})
	if rec.Body.String() != "degraded: "+etcdFullMsg+datafs.EtcdNoSpace {
		t.Fatalf("/healthz after kubectl met a full etcd = %q", rec.Body)
	}
	etcd.full.Store(false)
	testutil.Eventually(t, 10*time.Second, "the flag to go once etcd takes writes", func() (bool, string) {
		rec := l.serve(badCase{method: "GET", path: "/healthz"})
		return rec.Body.String() == "ok", rec.Body.String()
	})
}

// TestEtcdSpaceSaysFull: the lab's etcd says itself that it takes no
// writes (Lab.EtcdSpace, its NOSPACE alarm): /healthz says so with its
// reason before any request met it, the routes that write to the cluster
// answer 507 without trying, and once it takes writes again all is as
// before.
func TestEtcdSpaceSaysFull(t *testing.T) {
	l := newCheapLab(t, "")
	const why = "etcd's database has reached its 256.0 MiB quota; delete objects to make room"
	var full atomic.Bool
	lab := *l.srv.l()
	lab.EtcdSpace = func() (bool, string) {
		if full.Load() {
			return true, why
		}
		return false, ""
	}
	l.srv.SetLab(&lab)
	asked := 0
	l.ctrl.fail = func() error { asked++; return nil }

	full.Store(true)
	if rec := l.serve(badCase{method: "GET", path: "/healthz"}); rec.Body.String() != "degraded: "+etcdFullMsg+why {
		t.Fatalf("/healthz while etcd says it is full = %q", rec.Body)
	}
	_, etcdRoutes := fullRoutes(l.inst.ID)
	for _, r := range etcdRoutes {
		if r.refused {
			t.Run(r.method+" "+r.path, func(t *testing.T) { assertRefused(t, l, r.route, "", datafs.EtcdNoSpace, why, "Nothing was changed") })
		}
	}
	if asked != 0 {
		t.Errorf("the controllers were asked %d times while etcd took no writes", asked)
	}
	full.Store(false)
	if rec := l.serve(badCase{method: "GET", path: "/healthz"}); rec.Body.String() != "ok" {
		t.Fatalf("/healthz once etcd takes writes = %q", rec.Body)
	}
	if rec := l.serve(badCase{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`,
		header: map[string]string{"Content-Type": "application/json"}}); rec.Code != http.StatusOK || asked != 1 {
		t.Fatalf("a switch once etcd takes writes = %d %s (asked %d)", rec.Code, rec.Body, asked)
	}
}
