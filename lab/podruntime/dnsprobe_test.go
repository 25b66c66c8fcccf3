package podruntime

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/lab/kubelet"
)

const (
	agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.53"
	glibcImage   = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"
)

// TestDigAnswerOnly: upstream's e2e probes run `dig +noall +answer` and
// test its output for emptiness, so only answer records may print.
func TestDigAnswerOnly(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	for _, tc := range []struct {
		name, image string
		cmd         []string
		want        string
	}{
		{"search agnhost", agnhostImage, []string{"dig", "+notcp", "+noall", "+answer", "+search", "web", "A"}, "web.default.svc.cluster.local.\t\t30\tIN\tA\t10.96.0.20\n"},
		{"fqdn glibc tcp", glibcImage, []string{"dig", "+tcp", "+noall", "+answer", "+search", "web.default.svc.cluster.local", "A"}, "web.default.svc.cluster.local.\t\t30\tIN\tA\t10.96.0.20\n"},
		{"nxdomain prints nothing", glibcImage, []string{"dig", "+notcp", "+noall", "+answer", "+search", "nothere", "A"}, ""},
		{"noanswer", agnhostImage, []string{"dig", "+noall", "web.default.svc.cluster.local"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := exec(t, rt, tc.image, tc.cmd...)
			if code != 0 || out != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestAgnhostDNSConfig: agnhost dns-suffix and dns-server-list print
// resolv.conf's search and nameserver fields joined by commas.
func TestAgnhostDNSConfig(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	pod := testPod(agnhostImage)
	pod.Spec.DNSPolicy = v1.DNSNone
	pod.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"resolv.conf.local"}}
	for _, tc := range []struct{ arg, want string }{
		{"dns-suffix", "resolv.conf.local\n"},
		{"dns-server-list", "1.1.1.1\n"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			var out, errw strings.Builder
			exit := rt.Exec(context.Background(), pod, &pod.Spec.Containers[0], []string{"/agnhost", tc.arg}, kubelet.Stdio{Stdout: &out, Stderr: &errw})
			if exit.Code != 0 || out.String() != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", exit.Code, out.String(), errw.String(), tc.want)
			}
		})
	}
}

// TestEmptyDirServedToProxy: a querier container writes into an emptyDir
// the webserver container (agnhost test-webserver) serves, and a
// connection from ConnectPod (the apiserver's pods proxy) reads it; a
// port nothing listens on refuses the connection.
func TestEmptyDirServedToProxy(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	mounts := []v1.VolumeMount{{Name: "results", MountPath: "/results"}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-test", Namespace: "default", UID: "uid-dns"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "results", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{
				{Name: "webserver", Image: agnhostImage, Args: []string{"test-webserver"}, VolumeMounts: mounts},
				{Name: "querier", Image: glibcImage, Command: []string{"sh", "-c", "for i in `seq 1 2`; do echo OK > /results/musl_udp@web; done"}, VolumeMounts: mounts},
			},
		},
		Status: v1.PodStatus{PodIP: "10.244.1.6", HostIP: "10.0.1.10"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan kubelet.Exit, 1)
	go func() { served <- rt.Run(ctx, pod, &pod.Spec.Containers[0], kubelet.Stdio{}) }()
	if exit := rt.Run(ctx, pod, &pod.Spec.Containers[1], kubelet.Stdio{}); exit.Code != 0 {
		t.Fatalf("querier exited %d", exit.Code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rt.listenerFor(pod, 80) == nil {
		if time.Now().After(deadline) {
			t.Fatal("test-webserver never listened on port 80")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		name   string
		port   int32
		path   string
		status int
		body   string
	}{
		{"written file", 80, "/results/musl_udp@web", 200, "OK\n"},
		{"missing file", 80, "/results/nothere", 404, "404 page not found\n"},
		{"nothing listens", 8080, "/", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := rt.ConnectPod(pod, tc.port, "10.0.1.10")
			if tc.status == 0 {
				if err == nil || !strings.Contains(err.Error(), "connection refused") {
					c.Close()
					t.Fatalf("ConnectPod = %v; want connection refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req, _ := http.NewRequest(http.MethodGet, "http://10.244.1.6"+tc.path, nil)
			go func() { _ = req.Write(c) }()
			resp, err := http.ReadResponse(bufio.NewReader(c), req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("got %d %q; want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	cancel()
	<-served
	rt.ForgetPod(pod.UID)
	rt.mu.Lock()
	left := rt.pods[pod.UID]
	rt.mu.Unlock()
	if left != nil {
		t.Errorf("after ForgetPod the runtime still holds the Pod's state: %+v", left)
	}
}

// TestVolumeMounts: paths under a mount are the volume's (shared by the
// file systems that mount it), the mount shows in its parent's listing,
// and the mount point itself is a directory.
func TestVolumeMounts(t *testing.T) {
	vol := newVolume(16, 32)
	a := newMemFS(map[string]string{"/etc/hostname": "a\n"}, []string{"/tmp"}, 16, 32)
	b := newMemFS(map[string]string{}, nil, 16, 32)
	a.mounts = map[string]*memFS{"/results": vol}
	b.mounts = map[string]*memFS{"/data/out": vol}
	w, err := a.writer("/results/f", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "OK\n"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  func() (string, error)
		want string
		err  error
	}{
		{"other mount reads it", func() (string, error) { return b.read("/data/out/f") }, "OK\n", nil},
		{"not under the mount", func() (string, error) { return b.read("/results/f") }, "", errNotExist},
		{"listing shows the mount", func() (string, error) { n, _ := a.list("/"); return strings.Join(n, ","), nil }, "etc,results,tmp", nil},
		{"volume listing", func() (string, error) { n, _ := b.list("/data/out"); return strings.Join(n, ","), nil }, "f", nil},
		{"mount point is a directory", func() (string, error) { _, err := a.writer("/results", false); return "", err }, "", errIsDir},
		{"bounded", func() (string, error) {
			w, err := b.writer("/data/out/big", false)
			if err != nil {
				return "", err
			}
			_, err = io.WriteString(w, strings.Repeat("x", 17))
			return "", err
		}, "", errTooBig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if got != tc.want || err != tc.err {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
