//go:build !unit

package classroom

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// BenchmarkClassroomCapacity measures the local backend on this machine:
// the time from a student's first visit to their lab's page, cold (the lab
// starts on the visit) and from the warm pool (--warm 1 started it ahead);
// then each lab's idle RSS and CPU, and how many labs the machine fits.
//
// Labs fit = min(memory fit, CPU fit), where memory fit = 80% of MemTotal
// / the labs' mean idle RSS, and CPU fit = 80% of the cores / the labs'
// mean idle CPU (in cores). The 20% left is for the portal, the OS and
// students' bursts (a check, a reset): idle figures are a floor, not a
// plan for a class that works all at once.
//
// Each lab runs with the classroom's default of 3 nodes. One round: a
// lab's start is what is measured, and it costs seconds.
func BenchmarkClassroomCapacity(b *testing.B) {
	needBinary(b)
	c, base, lb := runClass(b, Config{
		Students: []string{"warm", "cold"}, DataDir: b.TempDir(), Binary: binary, Warm: 1,
		Lab: LabOptions{Nodes: 3}, StopTimeout: 20 * time.Second,
	})

	// The warm pool's lab (the first student in roster order) starts now.
	testutil.Eventually(b, 3*time.Minute, "the warm lab ready", func() (bool, string) {
		state, _ := lb.Status("warm")
		return state == stateReady, state
	})

	visit := func(name string) time.Duration {
		b.Helper()
		start := time.Now()
		res, err := http.Get(base + "/s/" + name + "/?token=" + c.StudentToken(name))
		if err != nil {
			b.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
			b.Fatalf("%s's first visit: %d %.200s", name, res.StatusCode, page)
		}
		return time.Since(start)
	}
	cold := visit("cold")
	warm := visit("warm")

	// Idle: nobody visits; start-up work (nodes joining, first syncs) has
	// settled. A benchmark may wait: it measures what time does.
	time.Sleep(20 * time.Second)
	var rss, cpu []float64
	const window = 20 * time.Second
	for _, s := range c.cfg.Students {
		pid := lb.pid(s)
		t0, ok0 := cpuTicks(pid)
		time.Sleep(window)
		t1, ok1 := cpuTicks(pid)
		r := rssMB(pid)
		if !ok0 || !ok1 || r == 0 {
			b.Fatalf("reading %s's lab (pid %d) in /proc", s, pid)
		}
		rss = append(rss, r)
		cpu = append(cpu, float64(t1-t0)/100/window.Seconds()) // USER_HZ is 100 on Linux
	}
	meanRSS, meanCPU := mean(rss), mean(cpu)
	memMB := memTotalMB()
	cores := runtime.NumCPU()
	fitMem := int(0.8 * memMB / meanRSS)
	fitCPU := int(0.8 * float64(cores) / max(meanCPU, 1e-3))
	fit := min(fitMem, fitCPU)

	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-visit-ms")
	b.ReportMetric(float64(warm.Microseconds())/1000, "warm-visit-ms")
	b.ReportMetric(meanRSS, "idle-RSS-MB/lab")
	b.ReportMetric(meanCPU*100, "idle-CPU-%/lab")
	b.ReportMetric(float64(fitMem), "labs-fit-mem")
	b.ReportMetric(float64(fitCPU), "labs-fit-cpu")
	b.ReportMetric(float64(fit), "labs-fit")
	b.Logf("first visit to a ready page: cold %s, warm pool %s; per lab idle: RSS %.0f MB, CPU %.1f%% of a core (mean of %d labs, 3 nodes each, CPU over %s); "+
		"machine: %.0f MB, %d cores; fit = min(0.8*%.0f/%.0f, 0.8*%d/%.3f) = min(%d, %d) = %d labs",
		cold.Round(time.Millisecond), warm.Round(10*time.Microsecond), meanRSS, meanCPU*100, len(rss), window,
		memMB, cores, memMB, meanRSS, cores, meanCPU, fitMem, fitCPU, fit)
}

// runClass runs a class on the local backend until the benchmark ends and
// returns it with the portal's base URL and its backend.
func runClass(b *testing.B, cfg Config) (*Classroom, string, *localBackend) {
	b.Helper()
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return c, "http://" + ln.Addr().String(), c.backend.(*localBackend)
}

// cpuTicks is the process's user+system CPU time in clock ticks.
func cpuTicks(pid int) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces), from ")".
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	return utime + stime, err1 == nil && err2 == nil
}

func rssMB(pid int) float64 { return procKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") / 1024 }

func memTotalMB() float64 { return procKB("/proc/meminfo", "MemTotal:") / 1024 }

// procKB reads a "Key:   123 kB" line.
func procKB(path, key string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			n, _ := strconv.ParseFloat(f[1], 64)
			return n
		}
	}
	return 0
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
