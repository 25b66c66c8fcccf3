//go:build !unit

package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
)

// testEtcdQuota is the package control plane's etcd quota (TestMain).
const testEtcdQuota = 32 << 20

// TestFullEtcd fills the control plane's real etcd past its quota with
// ConfigMaps, as a student's kubectl can: the apiserver's own answer
// ("etcdserver: mvcc: database space exceeded", a 500) to a controller
// switch's write becomes a 507 that says what is full and that nothing
// changed; an exercise reset, which probes the cluster first, is refused
// the same way; /healthz stays 200 and says etcd is full, first from the
// refused write, then in the lab's etcd's own words (Lab.EtcdSpace); once
// the objects are deleted the lab's space guard gives etcd room back and
// the lab takes writes again without a restart.
func TestFullEtcd(t *testing.T) {
	l, _ := newDiskLab(t, &datafs.Switch{})
	ctx := context.Background()
	// The switch writes through the apiserver, as the hosted manager's
	// update of the CCM's DaemonSet does, and returns its answer as it is.
	switches := env.Client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	l.ctrl.fail = func() error {
		_, err := switches.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "switch-" + strings.ToLower(rand.Text()[:8])}}, metav1.CreateOptions{})
		return err
	}
	t.Cleanup(func() { l.ctrl.fail = nil })

	const ns = "fill-etcd"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.Client.CoreV1().ConfigMaps(ns)
	var names []string
	emptyEtcd := func(ctx context.Context) {
		for _, n := range names {
			if err := cms.Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", n, err)
			}
		}
		names = nil
	}
	t.Cleanup(func() {
		emptyEtcd(context.Background())
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	payload := make([]byte, 900<<10)
	_, _ = rand.Read(payload) // etcd stores it as it is
	// Filled until it stays full: the lab's space guard compacts and
	// defragments a full etcd, and lets it take writes again once its
	// database is under four fifths of the quota: with that much in use,
	// neither a compaction nor a defragmentation can take it under.
	var refused error
	testutil.Eventually(t, 2*time.Minute, "etcd to stay full", func() (bool, string) {
		sp := env.CP.EtcdSpace()
		if sp.Full && sp.DBInUseBytes >= testEtcdQuota*4/5 && datafs.IsEtcdFull(refused) {
			return true, ""
		}
		if len(names) >= 4*testEtcdQuota/len(payload) {
			t.Fatalf("%d ConfigMaps of 900 KiB and etcd is not full: %+v, last write %v", len(names), sp, refused)
		}
		name := fmt.Sprintf("blob-%d", len(names))
		names = append(names, name)
		_, refused = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, BinaryData: map[string][]byte{"blob": payload}}, metav1.CreateOptions{})
		return false, fmt.Sprintf("%+v, last write %v", sp, refused)
	})
	t.Logf("etcd full after %d ConfigMaps of 900 KiB: %+v", len(names), env.CP.EtcdSpace())

	wantMsg := []string{"The cluster's database (etcd) is full (" + datafs.EtcdNoSpace + ")", "Nothing was changed.", "takes changes again by itself"}
	status := l.ctrl.Status()
	for _, tc := range []struct {
		name string
		req  req
	}{
		{"controller switch", req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`}},
		{"exercise reset", req{method: "POST", path: "/api/exercises/node-init/reset"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := l.do(tc.req)
			if code != http.StatusInsufficientStorage {
				t.Fatalf("%s %s with etcd full = %d %s, want 507", tc.req.method, tc.req.path, code, body)
			}
			for _, w := range wantMsg {
				if !strings.Contains(body, w) {
					t.Errorf("%s %s with etcd full: %s, want it to say %q", tc.req.method, tc.req.path, body, w)
				}
			}
			if now := l.ctrl.Status(); fmt.Sprint(now) != fmt.Sprint(status) {
				t.Errorf("the switches changed: %v, before %v", now, status)
			}
		})
	}
	if code, body := l.do(req{method: "GET", path: "/healthz"}); code != http.StatusOK || body != "degraded: "+etcdFullMsg+datafs.EtcdNoSpace {
		t.Errorf("/healthz after a refused write = %d %q", code, body)
	}

	// The lab's etcd says it too, in its own words, without a request.
	lab := *l.srv.l()
	lab.EtcdSpace = func() (bool, string) { s := env.CP.EtcdSpace(); return s.Full, s.Reason }
	l.srv.SetLab(&lab)
	testutil.Eventually(t, 30*time.Second, "/healthz to say why etcd is full", func() (bool, string) {
		_, body := l.do(req{method: "GET", path: "/healthz"})
		return strings.HasPrefix(body, "degraded: "+etcdFullMsg) && strings.Contains(body, "quota"), body
	})

	emptyEtcd(ctx)
	testutil.Eventually(t, 2*time.Minute, "the lab to take writes again once the objects are deleted", func() (bool, string) {
		_, body := l.do(req{method: "GET", path: "/healthz"})
		return body == "ok", body
	})
	if code, body := l.do(req{method: "PUT", path: "/api/controllers/node", body: `{"enabled":false}`}); code != http.StatusOK {
		t.Fatalf("a switch once etcd has room = %d %s", code, body)
	}
	probes, err := env.Client.CoreV1().ConfigMaps(probeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range probes.Items {
		if strings.HasPrefix(cm.Name, probePrefix) {
			t.Errorf("the space probe left %s behind", cm.Name)
		}
	}
}
