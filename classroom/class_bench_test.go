//go:build !unit

package classroom

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// BenchmarkClassRun runs a class for real on this machine, instead of
// dividing the machine by one lab's idle figures as
// BenchmarkClassroomCapacity does: `ccmlab classroom --prestart` with
// CCMLAB_CLASS_SIZE students (default 50), each lab the default one
// (cloud-provider-aws in its DaemonSet Pod, 3 worker nodes). It reports
//
//   - how long the whole class takes to be up (every lab ready);
//   - while the class is idle: each lab's /healthz through the portal (p99)
//     and a Node list from each lab's own apiserver, what `kubectl get
//     nodes` does (slowest);
//   - while 20 of the students create a LoadBalancer Service at the same
//     moment: the same two, and the slowest of the 20 Services to get its
//     EXTERNAL-IP (the Classic ELB's DNS name).
//
// It takes about ten minutes for 50 students on 2 cores.
//
//	CCMLAB_CLASS_SIZE=50 go test -run '^$' -bench ClassRun -benchtime 1x -timeout 40m ./classroom
func BenchmarkClassRun(b *testing.B) {
	needBinary(b)
	size := 50
	if v := os.Getenv("CCMLAB_CLASS_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			b.Fatalf("CCMLAB_CLASS_SIZE=%q: want a number of students from 1 to 200", v)
		}
		size = n
	}
	busy := min(20, size)
	students := make([]string, size)
	for i := range students {
		students[i] = fmt.Sprintf("s%02d", i+1)
	}
	availBefore := procKB("/proc/meminfo", "MemAvailable:")

	t0 := time.Now()
	c, base, lb := runClass(b, Config{
		Students: students, DataDir: b.TempDir(), Binary: binary, Prestart: true, IdleStop: -1,
		Lab: LabOptions{Nodes: 3}, StartTimeout: 10 * time.Minute, StopTimeout: 20 * time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	testutil.Eventually(b, 15*time.Minute, "every lab of the class ready", func() (bool, string) {
		ready := 0
		for _, s := range students {
			if st, _ := lb.Status(s); st == stateReady {
				ready++
			}
		}
		return ready == size, fmt.Sprintf("%d of %d labs ready", ready, size)
	})
	upTook := time.Since(t0)
	progressf("class of %d up in %s", size, upTook.Round(time.Second))

	clients := make(map[string]kubernetes.Interface, size)
	for _, s := range students {
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(lb.labs[s].dir, "kubeconfig"))
		if err != nil {
			b.Fatalf("%s's kubeconfig: %v", s, err)
		}
		rc.QPS, rc.Burst = 50, 100
		if clients[s], err = kubernetes.NewForConfig(rc); err != nil {
			b.Fatal(err)
		}
	}
	// Every lab has its Nodes initialized before the idle phase: the
	// class is idle, not still starting.
	testutil.Eventually(b, 10*time.Minute, "every lab's Nodes registered", func() (bool, string) {
		for _, s := range students {
			nodes, err := clients[s].CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil || len(nodes.Items) < 4 {
				return false, s + " has fewer than 4 Nodes"
			}
		}
		return true, ""
	})
	memUsed := (availBefore - procKB("/proc/meminfo", "MemAvailable:")) / 1024 / 1024

	probe := &classProbe{base: base, c: c, clients: clients, students: students}
	idle := probe.run(ctx, 20*time.Second, nil)
	progressf("idle: %s", idle)

	// 20 students create a LoadBalancer Service at the same moment.
	start := make(chan struct{})
	var wg sync.WaitGroup
	lbTook := make([]time.Duration, busy)
	lbErr := make([]error, busy)
	for i, s := range students[:busy] {
		wg.Go(func() {
			<-start
			t := time.Now()
			lbTook[i], lbErr[i] = createAndWaitLB(ctx, clients[s], t)
		})
	}
	busyPhase := probe.run(ctx, 0, func() {
		close(start)
		wg.Wait()
	})
	for i, err := range lbErr {
		if err != nil {
			b.Errorf("%s's LoadBalancer Service: %v", students[i], err)
		}
	}
	lbMax := slices.Max(lbTook)
	progressf("busy (%d Services at once, slowest EXTERNAL-IP %s): %s", busy, lbMax.Round(time.Millisecond), busyPhase)

	b.ReportMetric(float64(size), "students")
	b.ReportMetric(upTook.Seconds(), "class-up-s")
	b.ReportMetric(memUsed, "mem-used-GB")
	b.ReportMetric(idle.healthzP99, "idle-healthz-p99-ms")
	b.ReportMetric(idle.nodesMax, "idle-get-nodes-max-ms")
	b.ReportMetric(busyPhase.healthzP99, "busy-healthz-p99-ms")
	b.ReportMetric(busyPhase.nodesMax, "busy-get-nodes-max-ms")
	b.ReportMetric(lbMax.Seconds(), "busy-external-ip-max-s")
	b.ReportMetric(0, "ns/op")
}

// classProbe asks every lab, over and over, for its /healthz through the
// portal (once a second each) and its Node list from its own apiserver
// (once every two seconds each), as students who keep a page and a
// terminal open would.
type classProbe struct {
	base     string
	c        *Classroom
	clients  map[string]kubernetes.Interface
	students []string
}

type probeResult struct {
	healthzP99, nodesMax float64 // ms
	healthz, nodes       int
	failed               int
}

func (r probeResult) String() string {
	return fmt.Sprintf("/healthz p99 %.1f ms over %d, slowest Node list %.0f ms over %d, %d failed", r.healthzP99, r.healthz, r.nodesMax, r.nodes, r.failed)
}

// run probes for d, or, when during is set, for as long as during runs.
func (p *classProbe) run(ctx context.Context, d time.Duration, during func()) probeResult {
	ctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var hz, nl []float64
	failed := 0
	var wg sync.WaitGroup
	for _, s := range p.students {
		token := p.c.StudentToken(s)
		wg.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for n := 0; ; n++ {
				t := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/s/"+s+"/healthz", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := http.DefaultClient.Do(req)
				ok := err == nil && res.StatusCode == http.StatusOK
				if res != nil {
					res.Body.Close()
				}
				took := float64(time.Since(t).Microseconds()) / 1000
				var nodeTook float64
				nodeOK := true
				if n%2 == 0 && ctx.Err() == nil {
					t = time.Now()
					_, err := p.clients[s].CoreV1().Nodes().List(ctx, metav1.ListOptions{})
					nodeOK = err == nil
					nodeTook = float64(time.Since(t).Microseconds()) / 1000
				}
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				hz = append(hz, took)
				if n%2 == 0 {
					nl = append(nl, nodeTook)
				}
				if !ok || !nodeOK {
					failed++
				}
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	if during != nil {
		during()
	} else {
		select {
		case <-time.After(d): // the window probed, not a wait for a condition
		case <-ctx.Done():
		}
	}
	stop()
	wg.Wait()
	slices.Sort(hz)
	r := probeResult{healthz: len(hz), nodes: len(nl), failed: failed}
	if len(hz) > 0 {
		r.healthzP99 = hz[min(len(hz)-1, len(hz)*99/100)]
	}
	if len(nl) > 0 {
		r.nodesMax = slices.Max(nl)
	}
	return r
}

// createAndWaitLB creates a LoadBalancer Service and waits for its
// EXTERNAL-IP, polling every 50 ms; it returns the time from t.
func createAndWaitLB(ctx context.Context, cs kubernetes.Interface, t time.Time) (time.Duration, error) {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "class-bench"},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "class-bench"},
			Ports:    []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		got, err := cs.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err == nil && len(got.Status.LoadBalancer.Ingress) > 0 {
			return time.Since(t), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond): // a poll's period
		}
	}
	return time.Since(t), fmt.Errorf("no EXTERNAL-IP after %s", time.Since(t).Round(time.Second))
}

func progressf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "class run: "+format+"\n", args...)
}
