//go:build !unit

package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"

	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// testCA is a CA with a client certificate signed by it, as the apiserver
// holds one for kubelets.
type testCA struct {
	certPEM, keyPEM []byte
	pool            *x509.CertPool
	client          tls.Certificate
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "test-ca"}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _ := certutil.EncodeCertificates(ca)
	ckey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, ckey.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testCA{certPEM: certPEM, keyPEM: keyPEM, pool: pool, client: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ckey}}
}

// kubeletClient is how the apiserver talks to a kubelet: through a dialer
// (its egress proxy), verifying the node's serving certificate.
func (ca testCA) kubeletClient(m *Manager) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, addr string) (net.Conn, error) { return m.DialNode(ctx, addr) },
		TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{ca.client}},
	}}
}

func TestControlPlaneNode(t *testing.T) {
	ca := newTestCA(t)
	logs := podlog.New(0, 0)
	var stopped atomic.Bool
	var image atomic.Value
	image.Store("example/demo:1")
	l := newLab(t, "10.9.0.0/16", "aws", func(c *Config) {
		c.Logs, c.CACertPEM, c.CAKeyPEM = logs, ca.certPEM, ca.keyPEM
		c.StaticPods = func() []StaticPod {
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "kube-system"},
				Spec:       v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "demo", Image: image.Load().(string)}}},
			}
			return []StaticPod{{Pod: p, Stopped: stopped.Load()}}
		}
	})
	cp, err := l.cloud.RunInstance(cloud.WithCaller(context.Background(), "user"), cloud.RunInstanceInput{Tags: map[string]string{ControlPlaneTag: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	worker := l.launch(1)[0]
	node := cp.PrivateDNSName
	mirror := "demo-" + node
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Pods("kube-system").Delete(context.Background(), mirror, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	n := waitNodeReady(t, node, v1.ConditionTrue, waitTimeout)
	if _, ok := n.Labels[LabelControlPlane]; !ok {
		t.Errorf("control-plane node labels %v", n.Labels)
	}
	if _, ok := n.Labels[v1.LabelNodeExcludeBalancers]; !ok {
		t.Errorf("control-plane node not excluded from load balancers: %v", n.Labels)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == LabelControlPlane && tt.Effect == v1.TaintEffectNoSchedule }) {
		t.Errorf("control-plane node taints %v", n.Spec.Taints)
	}
	wn := waitNodeReady(t, worker.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	if _, ok := wn.Labels[LabelControlPlane]; ok {
		t.Error("a worker is labelled control-plane")
	}

	pods := env.Client.CoreV1().Pods("kube-system")
	var uid string
	waitFor(t, waitTimeout, "the mirror Pod Running", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		uid = string(p.UID)
		return IsMirrorPod(p) && p.Spec.NodeName == node && p.Status.Phase == v1.PodRunning && p.Status.PodIP == cp.PrivateIP &&
			len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Kind == "Node", nil
	})

	t.Run("stopped", func(t *testing.T) {
		stopped.Store(true)
		l.mgr.StaticPodsChanged()
		l.mgr.enqueueNodePods(node)
		waitFor(t, waitTimeout, "the container Completed and not Ready", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, mirror, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) != 1 {
				return false, nil
			}
			term := p.Status.ContainerStatuses[0].State.Terminated
			return term != nil && term.Reason == "Completed" && !p.Status.ContainerStatuses[0].Ready, nil
		})
		stopped.Store(false)
		l.mgr.enqueueNodePods(node)
		waitFor(t, waitTimeout, "running again", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, mirror, metav1.GetOptions{})
			return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, nil
		})
	})

	client := ca.kubeletClient(l.mgr)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("https://" + node + ":10250" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("containerLogs", func(t *testing.T) {
		for _, line := range []string{"one", "two", "three"} {
			logs.Append(podlog.StaticKey("demo"), time.Now(), line)
		}
		for _, tc := range []struct {
			path, want string
			code       int
		}{
			{"/containerLogs/kube-system/" + mirror + "/demo", "one\ntwo\nthree\n", 200},
			{"/containerLogs/kube-system/" + mirror + "/demo?tailLines=1", "three\n", 200},
			{"/containerLogs/kube-system/" + mirror + "/other", "container other is not valid", 400},
			{"/containerLogs/kube-system/" + mirror + "/demo?tailLines=x", "invalid tailLines", 400},
			{"/containerLogs/kube-system/nothing/demo", "not found", 404},
		} {
			code, body := get(tc.path)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
			}
		}
		// By its instance's IP too, with a certificate naming that IP.
		resp, err := client.Get("https://" + cp.PrivateIP + ":10250/healthz")
		if err != nil {
			t.Fatalf("by IP: %v", err)
		}
		resp.Body.Close()
		for _, addr := range []string{node + ":22", "ip-10-250-0-1.example:10250"} {
			if _, err := l.mgr.DialNode(context.Background(), addr); err == nil {
				t.Errorf("DialNode(%s) succeeded", addr)
			}
		}
	})

	t.Run("a changed manifest replaces the mirror Pod and ends followers", func(t *testing.T) {
		resp, err := client.Get("https://" + node + ":10250/containerLogs/kube-system/" + mirror + "/demo?follow=true")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- string(b)
		}()
		image.Store("example/demo:2")
		l.mgr.StaticPodsChanged()
		select {
		case body := <-done:
			if !strings.HasPrefix(body, "one\n") {
				t.Errorf("the follower read %q", body)
			}
		case <-time.After(waitTimeout):
			t.Fatal("the follower did not end when its mirror Pod was replaced")
		}
		waitFor(t, waitTimeout, "a new mirror Pod with the new image", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, mirror, metav1.GetOptions{})
			return err == nil && string(p.UID) != uid && p.Spec.Containers[0].Image == "example/demo:2", nil
		})
		if got := logs.Lines(podlog.StaticKey("demo")); len(got) != 3 {
			t.Errorf("the static Pod's log was not kept: %v", got)
		}
	})
}

func TestStartEvents(t *testing.T) {
	l := newLab(t, "10.10.0.0/16", "aws", nil)
	inst := l.launch(1)[0]
	waitNodeReady(t, inst.PrivateDNSName, v1.ConditionTrue, waitTimeout)
	ns := newNamespace(t)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:       v1.PodSpec{NodeName: inst.PrivateDNSName, Containers: []v1.Container{{Name: "web", Image: "nginx:1.29"}}},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"Pulling", "Pulled", "Created", "Started"}
	waitFor(t, waitTimeout, "the kubelet's start events", func(ctx context.Context) (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "p").String()})
		if err != nil {
			return false, err
		}
		var got []string
		for _, e := range evs.Items {
			if e.Source.Component == "kubelet" && e.Source.Host == inst.PrivateDNSName && e.InvolvedObject.FieldPath == "spec.containers{web}" {
				got = append(got, e.Reason)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, nil
			}
		}
		return true, nil
	})
}
