package podruntime

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// syncBuf is an io.Writer a test reads while a container writes it.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAddonImages runs kube-system's add-ons' containers as the kubelet
// does: each prints its start lines and runs until stopped; CoreDNS
// listens on 53 and its plugins' HTTP ports only while it runs.
func TestAddonImages(t *testing.T) {
	for _, tc := range []struct {
		image   string
		args    []string
		want    []string
		listens []int32
	}{
		{"registry.k8s.io/coredns/coredns:v1.14.6", []string{"-conf", "/etc/coredns/Corefile"}, []string{".:53\n", "CoreDNS-1.14.6\n"}, []int32{53, 8080, 8181, 9153}},
		{"registry.k8s.io/kube-proxy:v1.37.2", nil, []string{`server_linux.go:144] "Using iptables Proxier"`, `"Version info" version="v1.37.2"`, `NodeIPs=["10.0.1.10"]`}, nil},
		{"602401143452.dkr.ecr.ap-northeast-1.amazonaws.com/amazon-k8s-cni:v1.20.4-eksbuild.1", nil, []string{`"caller":"entrypoint.sh","msg":"Foregrounding IPAM daemon ..."`}, nil},
	} {
		t.Run(tc.image, func(t *testing.T) {
			rt, _ := newTestRuntime(t, Limits{})
			pod := testPod(tc.image)
			pod.Spec.Containers[0].Args = tc.args
			var out syncBuf
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan kubelet.Exit, 1)
			go func() { done <- rt.Run(ctx, pod, &pod.Spec.Containers[0], kubelet.Stdio{Stdout: &out, Stderr: &out}) }()
			testutil.Eventually(t, 10*time.Second, "the start lines", func() (bool, string) {
				for _, w := range tc.want {
					if !strings.Contains(out.String(), w) {
						return false, out.String()
					}
				}
				return true, ""
			})
			for _, p := range tc.listens {
				if !rt.Listens(pod, p) {
					t.Errorf("nothing listens on %d while it runs", p)
				}
			}
			cancel()
			<-done // it stops with its container
			for _, p := range tc.listens {
				if rt.Listens(pod, p) {
					t.Errorf("still listening on %d after it stopped", p)
				}
			}
		})
	}
}
