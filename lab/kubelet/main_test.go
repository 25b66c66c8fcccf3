//go:build !unit

package kubelet

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

var env *cptest.Env

func TestMain(m *testing.M) {
	cptest.Main(m, &env, func(c *controlplane.Config) {
		// The default 10.244.0.0/16 in /24s has podCIDRs for 256 nodes;
		// the 1,000-node benchmark needs more.
		c.ClusterCIDR = "10.128.0.0/12"
	})
}

// Generous: under -race the whole control plane runs several times slower.
const waitTimeout = 60 * time.Second

// lab is one test's cloud and running Manager.
type lab struct {
	t      *testing.T
	cloud  *cloud.Cloud
	mgr    *Manager
	client kubernetes.Interface
	stop   func()
}

// newLab starts a Manager over a fresh cloud. Each test passes its own VPC
// so that node names (derived from private IPs) never collide on the
// shared apiserver; cleanup deletes the test's Nodes so the scheduler of
// the next test does not see them.
func newLab(t *testing.T, vpcCIDR, profileName string, mod func(*Config)) *lab {
	t.Helper()
	cptest.Need(t)
	c, err := cloud.New(cloud.Config{VPCCIDR: vpcCIDR})
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, cloud: c, client: env.Client}
	t.Cleanup(func() {
		l.stop()
		deleteNodes(t, env.Client, c)
		_ = c.Close()
	})
	l.start(profileName, mod)
	return l
}

func (l *lab) start(profileName string, mod func(*Config)) {
	t := l.t
	p, err := profile.Get(profileName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Client:  l.client,
		Cloud:   l.cloud,
		Profile: p,
		Logger:  slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.mgr = m
	l.stop = cptest.Start(t, m.Run)
	sctx, scancel := context.WithTimeout(context.Background(), waitTimeout)
	defer scancel()
	if err := m.WaitForSync(sctx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
}

// restart stops the Manager and starts a new one on the same cloud, as a
// restart of ccmlab does.
func (l *lab) restart(profileName string) {
	l.stop()
	l.start(profileName, nil)
}

func (l *lab) launch(n int) []cloud.Instance {
	l.t.Helper()
	out := make([]cloud.Instance, n)
	for i := range out {
		inst, err := l.cloud.RunInstance(cloud.WithCaller(context.Background(), "user"), cloud.RunInstanceInput{})
		if err != nil {
			l.t.Fatal(err)
		}
		out[i] = inst
	}
	return out
}

func deleteNodes(t testing.TB, client kubernetes.Interface, c *cloud.Cloud) {
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, inst := range c.Snapshot().Instances {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := inst.PrivateDNSName
			if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
			if err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting lease %s: %v", name, err)
			}
		})
	}
	wg.Wait()
}

// waitFor is testutil.EventuallyCtx: the apiserver and the controllers are
// asynchronous by nature; there is no event to wait on from a test.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testutil.EventuallyCtx(t, timeout, what, cond)
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) v1.ConditionStatus {
	if c := findCondition(n, t); c != nil {
		return c.Status
	}
	return ""
}

// waitNodeReady waits until the node's Ready condition has status want.
func waitNodeReady(t testing.TB, name string, want v1.ConditionStatus, timeout time.Duration) *v1.Node {
	t.Helper()
	var node *v1.Node
	waitFor(t, timeout, "node "+name+" Ready="+string(want), func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		if got := nodeCondition(n, v1.NodeReady); got != want {
			return false, errors.New("Ready=" + string(got))
		}
		return true, nil
	})
	return node
}

// newNamespace makes a namespace for one test and waits for its default
// ServiceAccount, without which Pod admission refuses Pods.
func newNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubelet-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	waitFor(t, waitTimeout, "default service account", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return ns.Name
}
