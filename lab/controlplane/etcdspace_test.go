//go:build !unit

package controlplane_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// testQuota is the etcd quota of this package's control plane.
const testQuota = 32 << 20

// fakeDisk reports a terabyte free unless a test says otherwise.
type fakeDisk struct{ bytes atomic.Int64 }

func (d *fakeDisk) free(string) (int64, error) {
	if n := d.bytes.Load(); n > 0 {
		return n, nil
	}
	return 1 << 40, nil
}

// createProbe writes a small ConfigMap (and deletes it again when it was
// stored): the write a full etcd refuses.
func createProbe(ctx context.Context, name string) error {
	cms := env.Client.CoreV1().ConfigMaps("default")
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err == nil {
		_ = cms.Delete(ctx, name, metav1.DeleteOptions{})
	}
	return err
}

// stillAnswers checks what a full etcd must not stop: reads and the
// apiserver's health. The test binary staying up is the rest of the proof:
// an etcd that failed a write of its own would have ended it.
func stillAnswers(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := env.Client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a read failed while etcd is full: %v", err)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if body, err := env.Client.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Raw(); err != nil {
			t.Errorf("GET %s while etcd is full: %v %s", path, err, body)
		}
	}
}

// Filling etcd to its quota gets etcd's own answer, which the server maps to
// 507; the lab keeps answering reads and /healthz, and once the objects are
// deleted it takes writes again, without a restart.
func TestEtcdQuotaIsAnAnswer(t *testing.T) {
	cptest.Need(t)
	ctx := context.Background()
	cms := env.Client.CoreV1().ConfigMaps("default")
	payload := make([]byte, 900<<10) // random: etcd stores it as it is
	_, _ = rand.Read(payload)
	var names []string
	t.Cleanup(func() {
		for _, n := range names {
			_ = cms.Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	stored := 0
	fill := func() error {
		name := fmt.Sprintf("blob-%d", len(names))
		// etcd stores the write that crosses the quota and answers it with
		// the error all the same (etcdserver/apply/quota.go:36-52): every
		// name tried is deleted again.
		names = append(names, name)
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, BinaryData: map[string][]byte{"blob": payload}}, metav1.CreateOptions{})
		if err == nil {
			if stored++; stored > 4*testQuota/len(payload) {
				t.Fatalf("%d ConfigMaps of %d KiB fit in a %d MiB quota", stored, len(payload)>>10, testQuota>>20)
			}
		}
		return err
	}
	var refused error
	for refused == nil {
		refused = fill()
	}
	if !datafs.IsEtcdFull(refused) {
		t.Fatalf("write %d was refused with %v, not with etcd's %q", len(names), refused, datafs.EtcdNoSpace)
	}
	t.Logf("etcd refused write %d: %v", len(names), refused)

	// The lab compacts away the history earlier tests left and may find
	// room for a few more; fill that too.
	testutil.Eventually(t, time.Minute, "the lab to say etcd is full", func() (bool, string) {
		s := env.CP.EtcdSpace()
		if s.Full && strings.Contains(s.Reason, "quota") {
			return true, ""
		}
		if err := fill(); err != nil && !datafs.IsEtcdFull(err) {
			t.Fatalf("write %d: %v", len(names), err)
		}
		return false, fmt.Sprintf("%+v", s)
	})
	if err := createProbe(ctx, "while-full"); !datafs.IsEtcdFull(err) {
		t.Errorf("a write while full answered %v, want etcd's space error", err)
	}
	stillAnswers(t, ctx)

	for _, n := range names {
		if err := cms.Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s while full: %v", n, err)
		}
	}
	testutil.EventuallyCtx(t, 2*time.Minute, "writes to succeed again", func(ctx context.Context) (bool, error) {
		err := createProbe(ctx, "after-full")
		return err == nil, err
	})
	if s := env.CP.EtcdSpace(); s.Full || s.DBBytes >= testQuota {
		t.Errorf("after the deletes etcd still reads as full: %+v", s)
	}
}

// A data dir whose disk runs low gets the same answer before etcd's own
// writes can fail, and the lab takes writes again when space returns.
func TestEtcdLowDiskIsAnAnswer(t *testing.T) {
	cptest.Need(t)
	ctx := context.Background()
	disk.bytes.Store(10 << 20)
	t.Cleanup(func() { disk.bytes.Store(0) })
	testutil.Eventually(t, 30*time.Second, "the lab to say the disk is full", func() (bool, string) {
		s := env.CP.EtcdSpace()
		return s.Full && strings.Contains(s.Reason, "data dir's disk has 10.0 MiB free"), fmt.Sprintf("%+v", s)
	})
	if err := createProbe(ctx, "disk-low"); !datafs.IsEtcdFull(err) {
		t.Errorf("a write on a nearly full disk answered %v, want etcd's space error", err)
	}
	stillAnswers(t, ctx)

	disk.bytes.Store(0)
	testutil.EventuallyCtx(t, time.Minute, "writes to succeed again", func(ctx context.Context) (bool, error) {
		err := createProbe(ctx, "disk-back")
		return err == nil, err
	})
	if s := env.CP.EtcdSpace(); s.Full {
		t.Errorf("with the disk back etcd still reads as full: %+v", s)
	}
}
