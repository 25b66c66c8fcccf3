package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimes runs the binary once in a fresh data dir and returns the
// elapsed times it printed per stage, and its RSS after settling idle.
func startTimes(b *testing.B, args ...string) (map[string]time.Duration, int64) {
	b.Helper()
	needBinary(b)
	dir := b.TempDir()
	cmd := exec.Command(binary, append([]string{"--data-dir", dir, "--listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	stages := map[string]time.Duration{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ccmlab is ready") {
			break
		}
		f := strings.Fields(line)
		if len(f) == 4 && f[1] == "ready" {
			d, err := time.ParseDuration(f[3])
			if err == nil {
				stages[f[0]] = d
			}
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	// Idle means after start-up work has settled.
	time.Sleep(10 * time.Second)
	return stages, rssKB(cmd.Process.Pid)
}

func rssKB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// BenchmarkColdStart compares a whole lab's start against a bare
// etcd+kube-apiserver start of the same binary, measured in the same run,
// alternating the two so machine noise hits both. Budget
// (internal/benchtable): lab ready within 1.2x the bare apiserver start.
func BenchmarkColdStart(b *testing.B) {
	const rounds = 3
	var bare, etcd, apiserver, labReady []time.Duration
	var rss int64
	for i := 0; i < rounds; i++ {
		s, _ := startTimes(b, "--bare-apiserver")
		bare = append(bare, s["apiserver"])
		s, r := startTimes(b)
		etcd = append(etcd, s["etcd"])
		apiserver = append(apiserver, s["apiserver"])
		labReady = append(labReady, s["lab"])
		rss = max(rss, r)
	}
	ratio := float64(median(labReady)) / float64(median(bare))
	b.ReportMetric(float64(median(etcd).Milliseconds()), "etcd-ms")
	b.ReportMetric(float64(median(apiserver).Milliseconds()), "apiserver-ms")
	b.ReportMetric(float64(median(labReady).Milliseconds()), "lab-ms")
	b.ReportMetric(float64(median(bare).Milliseconds()), "bare-apiserver-ms")
	b.ReportMetric(ratio, "lab/bare")
	b.ReportMetric(float64(rss)/1024, "idle-RSS-MB")
	b.Logf("median of %d: etcd %s, apiserver %s, lab ready %s; bare etcd+apiserver %s; ratio %.2f (budget 1.2); idle RSS %d MB",
		rounds, median(etcd), median(apiserver), median(labReady), median(bare), ratio, rss/1024)
}
