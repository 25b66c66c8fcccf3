//go:build !unit

package apptest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/awslimits"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

// BenchmarkScaleAWS is BenchmarkScale on the lab `ccmlab serve` builds:
// the CCM is k8s.io/cloud-provider-aws in its DaemonSet Pod, talking the AWS
// query protocol to the lab's AWS API, and every load balancer is a Classic
// ELB. Besides the convergence time it counts the AWS API calls the
// provider makes, per action, per node (while the nodes join) and per
// Service (while the Services converge), and the busiest second of each
// action: the AWS API bill of a cluster, which nobody measures on AWS
// because it costs money and throttles a real account.
//
//	go test -run '^$' -bench 'ScaleAWS/100x100' -benchtime 1x ./app/apptest
func BenchmarkScaleAWS(b *testing.B) { benchScales(b, scaleRunAWS) }

func scaleRunAWS(b *testing.B, n int) {
	cptest.Need(b)
	ctx, cancel := context.WithCancel(env.Ctx)
	defer cancel()
	runEnv := *env
	runEnv.Ctx = ctx
	l := sim.DefaultLab()
	l.Nodes = 0 // the benchmark launches them, at once
	// Room for n Classic ELBs: past a student's quotas.
	l.Quotas = cloud.ScaleQuotas(n)
	cfg, err := served(&runEnv, l)
	if err != nil {
		b.Fatal(err)
	}
	cfg.HeartbeatInterval = timing().Heartbeat
	lab, err := start(&runEnv, cfg, sim.AWSProviderUpstream)
	if err != nil {
		b.Fatal(err)
	}
	up := lab.Upstream
	rc := rest.CopyConfig(env.Config)
	rc.QPS = -1
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup(b, client, lab, cancel)
	bill := startAWSBill(ctx, lab.Cloud)

	registeredAt, initializedAt := watchNodes(ctx, b, client, n)
	b.ResetTimer()
	t0 := time.Now()
	launched := map[string]bool{}
	for i := range n {
		in, err := lab.Cloud.RunInstance(cloud.WithCaller(ctx, "bench"), cloud.RunInstanceInput{})
		if err != nil {
			b.Fatalf("instance %d: %v", i, err)
		}
		launched[in.ID] = true
	}
	poll(b, 5*time.Minute, "the watch to see every Node initialized", func() (bool, string) {
		return !initializedAt().IsZero(), "waiting"
	})
	nodesTook := initializedAt().Sub(t0)
	progress("all %d Nodes registered %s after the launch, all initialized %s after it", n, registeredAt().Sub(t0).Round(time.Millisecond), nodesTook.Round(time.Millisecond))
	nodePhase := bill.cut()

	t1 := time.Now()
	inParallel(n, func(i int) {
		if _, err := client.CoreV1().Services("default").Create(ctx, lbService(i), metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	regTook := pollServices(b, n, t1, func() progressOf { return convergedAWS(ctx, client, lab, n) })
	svcTook := time.Since(t1)
	// A node's bill includes its route, which the Route controller writes
	// on its own period (and so, in a short run, possibly after the
	// Services converged): the bill is cut once every node has one. The
	// wait is not part of the timed run.
	poll(b, 2*time.Minute, "every node's route", func() (bool, string) {
		routed := 0
		for _, r := range lab.Cloud.Routes() {
			if launched[r.InstanceID] {
				routed++
			}
		}
		return routed >= n, fmt.Sprintf("%d of %d nodes have their route", routed, n)
	})
	svcPhase := bill.cut()
	b.StopTimer()
	if hits := up.Tripwire.Hits(); len(hits) > 0 {
		b.Fatalf("requests reached the tripwire (they would have gone to AWS): %v", hits)
	}

	// A call is a node's or a Service's by who made it, not by when: the
	// Route controller writes the nodes' routes on its own period, often
	// while the Services converge.
	all := mergePhases(nodePhase, svcPhase)
	perNode, perSvc := float64(all.side(nodeSide))/float64(n), float64(all.side(serviceSide))/float64(n)
	b.ReportMetric(float64(n)/nodesTook.Seconds(), "nodes/s")
	b.ReportMetric(nodesTook.Seconds()*1000/float64(n), "ms/node")
	b.ReportMetric(regTook.Seconds()*1000/float64(n), "ms/service")
	b.ReportMetric((nodesTook + svcTook).Seconds(), "converge-s")
	b.ReportMetric(perNode, "aws-calls/node")
	b.ReportMetric(perSvc, "aws-calls/service")
	b.ReportMetric(float64(all.lost), "aws-calls-lost")
	b.ReportMetric(0, "ns/op")
	// The per-action table, as lines benchtable -scale repeats.
	fmt.Printf("scale: aws api %dx%d (Lease every %s): nodes joined in %.1f s, Services registered in %.1f s, converged in %.1f s\n",
		n, n, timing().Heartbeat, nodesTook.Seconds(), regTook.Seconds(), svcTook.Seconds())
	fmt.Printf("scale: aws api %-54s %8s %8s %6s %13s %s\n", "action", "per node", "per svc", "peak/s", "AWS bucket", "on a real account")
	throttled := throttling(all, t0)
	for _, k := range slices.Sorted(maps.Keys(all.count)) {
		bk, verdict := "?", "no published bucket"
		if lim, ok := awslimits.Of(k); ok {
			bk, verdict = lim.String(), "within its bucket"
			if th, ok := throttled[k]; ok {
				verdict = fmt.Sprintf("throttled %d s in, %d calls refused", th.At, th.Refused)
			}
		}
		fmt.Printf("scale: aws api %-54s %8.2f %8.2f %6d %13s %s\n", k, float64(all.bySide[nodeSide][k])/float64(n), float64(all.bySide[serviceSide][k])/float64(n), all.peak[k], bk, verdict)
	}
	if th, ok := throttled[awslimits.ELBAccount]; ok {
		lim, _ := awslimits.Of(awslimits.ELBAccount)
		fmt.Printf("scale: aws api %-54s %8s %8s %6s %13s throttled %d s in, %d calls refused\n",
			awslimits.ELBAccount+" (the account's bucket)", "", "", "", lim, th.At, th.Refused)
	}
	if first, ok := firstThrottled(throttled); ok {
		fmt.Printf("scale: aws api %dx%d: throttled first on a real account: %s, %d s into the run\n", n, n, first, throttled[first].At)
	}
}

// Who a call is for: the node controllers' calls are a node's cost, the
// Service controller's a Service's.
const (
	nodeSide    = "node"
	serviceSide = "service"
)

func sideOf(caller string) string {
	if caller == "service-controller" {
		return serviceSide
	}
	return nodeSide
}

func mergePhases(ps ...billPhase) billPhase {
	out := newPhase(0)
	for _, p := range ps {
		for k, v := range p.count {
			out.count[k] += v
		}
		for side, m := range p.bySide {
			for k, v := range m {
				out.bySide[side][k] += v
			}
		}
		for k, v := range p.peak {
			out.peak[k] = max(out.peak[k], v)
		}
		for k, secs := range p.perSec {
			if out.perSec[k] == nil {
				out.perSec[k] = map[int64]int{}
			}
			for sec, c := range secs {
				out.perSec[k][sec] += c
			}
		}
		out.lost += p.lost
	}
	return out
}

func (p billPhase) side(side string) int {
	t := 0
	for _, v := range p.bySide[side] {
		t += v
	}
	return t
}

// convergedAWS: every Service has an ingress and a Classic ELB whose
// instances are all n workers (registered), healthy (converged).
func convergedAWS(ctx context.Context, client kubernetes.Interface, lab *Lab, n int) progressOf {
	svcs, err := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return progressOf{state: err.Error()}
	}
	withIP := 0
	for _, s := range svcs.Items {
		if len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].Hostname != "" {
			withIP++
		}
	}
	if withIP < n {
		return progressOf{state: fmt.Sprintf("%d of %d Services have an EXTERNAL-IP", withIP, n)}
	}
	var targets [][]cloud.Target
	for _, lb := range lab.Cloud.LoadBalancerViews() {
		targets = append(targets, lb.Targets)
	}
	return countTargets(targets, n, "ELBs", "instances")
}

// awsBill tallies the cloud's AWS API calls (those with a service: EC2,
// ELB, ELBv2) by "service:action", and each action's busiest second, by
// reading the call log every 100 ms from where it left off. A call the
// ring dropped before it was read is counted in lost.
type awsBill struct {
	mu    sync.Mutex
	cur   billPhase
	cloud *cloud.Cloud
}

type billPhase struct {
	count   map[string]int
	bySide  map[string]map[string]int // nodeSide or serviceSide -> action -> calls
	perSec  map[string]map[int64]int
	peak    map[string]int
	lost    int
	lastSeq uint64
}

func newPhase(seq uint64) billPhase {
	return billPhase{count: map[string]int{}, bySide: map[string]map[string]int{nodeSide: {}, serviceSide: {}}, perSec: map[string]map[int64]int{}, peak: map[string]int{}, lastSeq: seq}
}

func startAWSBill(ctx context.Context, c *cloud.Cloud) *awsBill {
	var last uint64
	if calls := c.Calls(0); len(calls) > 0 {
		last = calls[len(calls)-1].Seq
	}
	bl := &awsBill{cur: newPhase(last), cloud: c}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				bl.read()
			}
		}
	}()
	return bl
}

func (bl *awsBill) read() {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	p := &bl.cur
	for _, c := range bl.cloud.Calls(p.lastSeq) {
		if c.Seq <= p.lastSeq {
			continue
		}
		if c.State != cloud.CallDone {
			break // read it, and what follows, once it has finished
		}
		if c.Seq > p.lastSeq+1 {
			p.lost += int(c.Seq - p.lastSeq - 1)
		}
		p.lastSeq = c.Seq
		if c.Service == "" {
			continue // the lab's own Go API (the bench's RunInstance)
		}
		k := c.Service + ":" + c.Action
		p.count[k]++
		p.bySide[sideOf(c.Caller)][k]++
		if p.perSec[k] == nil {
			p.perSec[k] = map[int64]int{}
		}
		sec := c.Time.Unix()
		p.perSec[k][sec]++
		p.peak[k] = max(p.peak[k], p.perSec[k][sec])
	}
}

// cut ends the current phase and starts the next where it stopped.
func (bl *awsBill) cut() billPhase {
	bl.read()
	bl.mu.Lock()
	defer bl.mu.Unlock()
	p := bl.cur
	bl.cur = newPhase(p.lastSeq)
	return p
}

// throttling replays every action's calls through its documented bucket,
// and all ELB calls through the account's, from the run's start.
func throttling(p billPhase, start time.Time) map[string]awslimits.Throttle {
	out := map[string]awslimits.Throttle{}
	elb := map[int64]int{}
	for k, secs := range p.perSec {
		if strings.HasPrefix(k, "elasticloadbalancing:") {
			for s, c := range secs {
				elb[s] += c
			}
		}
		if b, ok := awslimits.Of(k); ok {
			if th, ok := awslimits.Replay(b, secs, start.Unix()); ok {
				out[k] = th
			}
		}
	}
	if b, ok := awslimits.Of(awslimits.ELBAccount); ok {
		if th, ok := awslimits.Replay(b, elb, start.Unix()); ok {
			out[awslimits.ELBAccount] = th
		}
	}
	return out
}

// firstThrottled is the action refused earliest (ties: the one refused
// most, then by name).
func firstThrottled(th map[string]awslimits.Throttle) (string, bool) {
	keys := slices.Sorted(maps.Keys(th))
	if len(keys) == 0 {
		return "", false
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		if c := cmp.Compare(th[a].At, th[b].At); c != 0 {
			return c
		}
		return cmp.Compare(th[b].Refused, th[a].Refused)
	})
	return keys[0], true
}
