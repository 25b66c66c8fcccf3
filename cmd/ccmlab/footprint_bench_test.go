package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// The footprint benchmarks measure processes from the outside, as a
// classroom's machine sees them: RSS from /proc/<pid>/status and CPU from
// the utime+stime ticks of /proc/<pid>/stat over a window.

const (
	// settle is how long a process is left alone after ready (or after a
	// change) before a window is measured: start-up work and the first
	// resyncs are over by then.
	settle = 30 * time.Second
	window = 30 * time.Second
)

// cpuTicks is the process's user+system CPU in clock ticks (1/100 s on
// Linux).
func cpuTicks(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after ")".
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ut + st
}

// cpuPercent is the CPU the processes used over d, in % of one core.
func cpuPercent(d time.Duration, pids ...int) float64 {
	sum := func() (t float64) {
		for _, p := range pids {
			t += cpuTicks(p)
		}
		return t
	}
	t0 := sum()
	time.Sleep(d)
	return (sum() - t0) / d.Seconds() // ticks/s at 100 ticks/s = % of a core
}

func memTotalMB() float64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// statusMB reads fields of /proc/<pid>/status in MB (RssAnon: private
// memory; RssFile: mostly the binary's text, shared by every lab on the
// machine that runs the same binary).
func statusMB(pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// idleSplit starts the binary with args, waits for ready, leaves it alone
// for settle and returns, at the end of a CPU window, its RSS and the
// private and file-backed parts of it (MB), and that CPU.
func idleSplit(b *testing.B, args ...string) (rssMB, cpu, anonMB, fileMB float64) {
	b.Helper()
	p := startProcess(b, b.TempDir(), args...)
	defer func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
	}()
	time.Sleep(settle)
	pid := p.cmd.Process.Pid
	cpu = cpuPercent(window, pid)
	return float64(rssKB(pid)) / 1024, cpu, statusMB(pid, "RssAnon"), statusMB(pid, "RssFile")
}

// BenchmarkIdle: a 3-node lab 30 s after ready, against a bare control
// plane of the same binary measured in the same run: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler as the lab runs them (every
// default API, admission plugin and controller, as kubeadm starts them),
// with no lab (--bare-control-plane). Budgets (issue 38 items 1 and 10):
// the lab's private memory (RssAnon; the binary's file-backed pages are
// shared by every lab of a class) at most 60 MB above the bare control
// plane's; CPU above it at most 0.5% of a core. labs/machine is how many
// such labs this machine holds by memory and by CPU, whichever is fewer.
func BenchmarkIdle(b *testing.B) {
	needBinary(b)
	for range b.N {
		bareRSS, bareCPU, bareAnon, _ := idleSplit(b, "--bare-control-plane")
		rss, cpu, anon, file := idleSplit(b)
		b.ReportMetric(anon, "idle-anon-MB")
		b.ReportMetric(anon-bareAnon, "idle-anon-above-bare-MB")
		b.ReportMetric(file, "idle-file-MB")
		b.ReportMetric(rss, "idle-RSS-MB")
		b.ReportMetric(cpu, "idle-CPU-%")
		b.ReportMetric(cpu-bareCPU, "idle-CPU-above-bare-%")
		b.ReportMetric(bareRSS, "bare-RSS-MB")
		b.ReportMetric(bareAnon, "bare-anon-MB")
		b.ReportMetric(bareCPU, "bare-CPU-%")
		byMem := memTotalMB() / rss
		byCPU := float64(runtime.NumCPU()) * 100 / max(cpu, 0.01)
		b.ReportMetric(float64(int(min(byMem, byCPU))), "labs/machine")
		b.ReportMetric(0, "ns/op")
		b.Logf("idle lab: RSS %.0f MB (private %.0f, file-backed %.0f), CPU %.2f%%; bare control plane: RSS %.0f MB (private %.0f), CPU %.2f%%; private above bare %.1f MB; labs by memory %.0f, by CPU %.0f",
			rss, anon, file, cpu, bareRSS, bareAnon, bareCPU, anon-bareAnon, byMem, byCPU)
	}
}

// kwokVersion is the KWOK release the node-cost benchmark compares with;
// `make bench` builds it (CCMLAB_KWOK names the binary).
const kwokVersion = "v0.8.0"

// BenchmarkNodeCost: steady-state CPU per simulated node, the lab's own
// against KWOK's, on the same embedded apiserver in the same run. KWOK runs
// its module's node-initialize and node-heartbeat-with-lease stages against
// a lab whose node-lifecycle and route controllers are off (KWOK's nodes
// have no instance behind them), renewing leases as often as the lab's
// kubelets do (lease duration 4 x the lab's 2.5 s heartbeat, kubelet's
// ratio). The lab's figure includes everything a node costs it: kubelet
// heartbeats and leases, status writes, the CCM's node controllers, the
// data plane's and the observer's share. Budget: lab/kwok <= 1.
func BenchmarkNodeCost(b *testing.B) {
	needBinary(b)
	kwok := os.Getenv("CCMLAB_KWOK")
	if kwok == "" {
		b.Skip("CCMLAB_KWOK is not set: `make bench` builds KWOK " + kwokVersion + " and sets it")
	}
	stages := os.Getenv("CCMLAB_KWOK_STAGES")
	n := 200
	if v, err := strconv.Atoi(os.Getenv("CCMLAB_BENCH_NODES")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		kwokPerNode := kwokCost(b, kwok, stages, n)
		labPerNode := labNodeCost(b, n)
		b.ReportMetric(kwokPerNode, "kwok-cpu-ms/s/node")
		b.ReportMetric(labPerNode, "lab-cpu-ms/s/node")
		b.ReportMetric(labPerNode/kwokPerNode, "lab/kwok")
		b.ReportMetric(float64(n), "nodes")
		b.ReportMetric(0, "ns/op")
	}
}

// perNode turns two CPU figures (% of a core) into ms of CPU per second
// per node.
func perNode(busy, idle float64, n int) float64 { return (busy - idle) * 10 / float64(n) }

func kwokCost(b *testing.B, kwok, stages string, n int) float64 {
	dir := b.TempDir()
	p := startProcess(b, dir, "--nodes", "0", "--controllers", "node,service")
	defer func() { _ = p.cmd.Process.Signal(os.Interrupt); _ = p.cmd.Wait() }()
	time.Sleep(settle)
	idleCPU := cpuPercent(window, p.cmd.Process.Pid)

	k := exec.Command(kwok, testutil.KWOKArgs(filepath.Join(dir, "kubeconfig"), 10, stages)...)
	var kout strings.Builder
	k.Stdout, k.Stderr = &kout, &kout
	if err := k.Start(); err != nil {
		b.Fatalf("starting kwok: %v", err)
	}
	defer func() { _ = k.Process.Kill(); _ = k.Wait() }()

	client := clientFor(b, dir)
	ctx := context.Background()
	for i := range n {
		if _, err := client.CoreV1().Nodes().Create(ctx, testutil.KWOKNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		if b.Failed() {
			b.Logf("kwok output:\n%s", kout.String())
		}
	}()
	waitNodesReady(b, client, "type=kwok", n, false)
	time.Sleep(settle)
	busy := cpuPercent(window, p.cmd.Process.Pid, k.Process.Pid)
	b.Logf("kwok %s, %d nodes: lab idle %.1f%%, lab+kwok %.1f%% of a core", kwokVersion, n, idleCPU, busy)
	return perNode(busy, idleCPU, n)
}

func labNodeCost(b *testing.B, n int) float64 {
	dir := b.TempDir()
	p := startProcess(b, dir, "--nodes", "0")
	defer func() { _ = p.cmd.Process.Signal(os.Interrupt); _ = p.cmd.Wait() }()
	time.Sleep(settle)
	idleCPU := cpuPercent(window, p.cmd.Process.Pid)
	for range n {
		resp, err := http.Post("http://"+p.addr+"/api/cloud/instances", "application/json", nil)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("launching an instance: %s", resp.Status)
		}
	}
	waitNodesReady(b, clientFor(b, dir), "", n, true)
	time.Sleep(settle)
	busy := cpuPercent(window, p.cmd.Process.Pid)
	b.Logf("lab, %d nodes: idle %.1f%%, with nodes %.1f%% of a core", n, idleCPU, busy)
	return perNode(busy, idleCPU, n)
}

// waitNodesReady polls until n nodes matching selector are Ready (and,
// with initialized, have lost the cloud provider's uninitialized taint).
func waitNodesReady(b *testing.B, c kubernetes.Interface, selector string, n int, initialized bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		ready := 0
		if err == nil {
			for _, node := range list.Items {
				if nodeReady(&node) && (!initialized || node.Spec.ProviderID != "" && !tainted(&node)) {
					ready++
				}
			}
		}
		if ready >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d nodes ready after 5m (%v)", ready, n, err)
		}
		time.Sleep(time.Second)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
			return true
		}
	}
	return false
}
