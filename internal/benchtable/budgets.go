package benchtable

// Budgets are the footprint, latency and scale budgets of issue 15 and the
// earlier ones, in the order the table prints them. Bench is the benchmark
// name without the -GOMAXPROCS suffix (sub-benchmarks with their /name);
// Unit is the metric it reports. Baseline, when set, is another metric of
// the same benchmark that the figure is compared with in the same run.
var Budgets = []Budget{
	{Name: "lab ready / bare etcd+apiserver start", Bench: "BenchmarkColdStart", Unit: "lab/bare", Max: 1.2, Baseline: "bare-apiserver-ms", Figure: "lab-ms"},
	{Name: "idle RSS, 3 nodes (MB)", Bench: "BenchmarkIdle", Unit: "idle-RSS-MB", Baseline: "bare-RSS-MB"},
	{Name: "  of which private (RssAnon, MB)", Bench: "BenchmarkIdle", Unit: "idle-anon-MB", Baseline: "bare-anon-MB"},
	{Name: "  private above the bare control plane (MB)", Bench: "BenchmarkIdle", Unit: "idle-anon-above-bare-MB", Max: 60},
	{Name: "  of which file-backed (binary text, shared, MB)", Bench: "BenchmarkIdle", Unit: "idle-file-MB"},
	{Name: "idle CPU, 3 nodes (% of a core)", Bench: "BenchmarkIdle", Unit: "idle-CPU-%", Baseline: "bare-CPU-%"},
	{Name: "  above the bare control plane (% of a core)", Bench: "BenchmarkIdle", Unit: "idle-CPU-above-bare-%", Max: 0.5},
	{Name: "labs per machine (2 cores, 24 GiB)", Bench: "BenchmarkIdle", Unit: "labs/machine", Min: 30},
	{Name: "apply -> EXTERNAL-IP p50 (ms)", Bench: "BenchmarkServiceExternalIP", Unit: "p50-ms", Max: 300},
	{Name: "apply -> EXTERNAL-IP p99 (ms)", Bench: "BenchmarkServiceExternalIP", Unit: "p99-ms"},
	{Name: "apply -> NLB hostname p50, real AWS Load Balancer Controller (ms)", Bench: "BenchmarkLBC/hostname", Unit: "p50-ms", Max: 2000},
	{Name: "apply -> NLB hostname p99, real AWS Load Balancer Controller (ms)", Bench: "BenchmarkLBC/hostname", Unit: "p99-ms"},
	{Name: "  its idle private memory, live after GC (MB)", Bench: "BenchmarkLBC/idle", Unit: "idle-anon-lbc-MB", Max: 40},
	{Name: "node registered -> initialized p50 (ms)", Bench: "BenchmarkNodeInit", Unit: "p50-ms", Max: 300},
	{Name: "node registered -> initialized p99 (ms)", Bench: "BenchmarkNodeInit", Unit: "p99-ms"},
	{Name: "apply -> EXTERNAL-IP p50, cloud-provider-aws (ms)", Bench: "BenchmarkUpstreamServiceExternalIP", Unit: "p50-ms", Max: 300},
	{Name: "apply -> EXTERNAL-IP p99, cloud-provider-aws (ms)", Bench: "BenchmarkUpstreamServiceExternalIP", Unit: "p99-ms"},
	{Name: "node registered -> initialized p50, cloud-provider-aws (ms)", Bench: "BenchmarkUpstreamNodeInit", Unit: "p50-ms", Max: 300},
	{Name: "node registered -> initialized p99, cloud-provider-aws (ms)", Bench: "BenchmarkUpstreamNodeInit", Unit: "p99-ms"},
	{Name: "kubectl exec deploy/web -- curl -s http://web, p50 (ms)", Bench: "BenchmarkPodCommands", Unit: "exec-curl-p50-ms", Max: 300, Baseline: "kubectl-baseline-p50-ms"},
	{Name: "kubectl run --rm -i ... -- curl, to its output, p50 (s)", Bench: "BenchmarkPodCommands", Unit: "run-curl-p50-s", Max: 3},
	{Name: "CPU per node / KWOK's per node", Bench: "BenchmarkNodeCost", Unit: "lab/kwok", Max: 1.0, Baseline: "kwok-cpu-ms/s/node", Figure: "lab-cpu-ms/s/node"},
	// The scale runs: the median of `make bench`'s runs (-count), each
	// with KWOK's nodes per second on the same apiserver and Lease timing
	// (lease-renew-s) as its baseline. Per-Service cost is timed to the
	// load balancers' registration, without the data plane's health round.
	{Name: "nodes joined+initialized per s, 100 (lab's provider) / KWOK's", Bench: "BenchmarkScale/100x100", Unit: "nodes/s", MinRatio: 1, Baseline: "kwok-nodes/s"},
	{Name: "nodes joined+initialized per s, 1,000 (lab's provider) / KWOK's", Bench: "BenchmarkScale/1000x1000", Unit: "nodes/s", MinRatio: 1, Baseline: "kwok-nodes/s"},
	{Name: "1,000 nodes x 1,000 LB Services converge, lab's provider (s)", Bench: "BenchmarkScale/1000x1000", Unit: "converge-s", Max: 120},
	{Name: "cost per Service, 1,000 / 100 (flat), lab's provider", Bench: "BenchmarkScale/1000x1000", Unit: "ms/service", MaxRatio: 1.5, Baseline: "ms/service", BaselineBench: "BenchmarkScale/100x100"},
	{Name: "cost per node, 1,000 / 100 (flat), lab's provider", Bench: "BenchmarkScale/1000x1000", Unit: "ms/node", MaxRatio: 1.5, Baseline: "ms/node", BaselineBench: "BenchmarkScale/100x100"},
	{Name: "1,000 nodes x 1,000 Classic ELBs converge, cloud-provider-aws (s)", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "converge-s", Max: 180},
	{Name: "  Lease renewed every (s; 10 is upstream's timing)", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "lease-renew-s"},
	{Name: "  nodes joined+initialized per s, 100 / KWOK's", Bench: "BenchmarkScaleAWS/100x100", Unit: "nodes/s", MinRatio: 1, Baseline: "kwok-nodes/s"},
	{Name: "  nodes joined+initialized per s, 1,000 / KWOK's", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "nodes/s", MinRatio: 1, Baseline: "kwok-nodes/s"},
	{Name: "  cost per Service, 1,000 / 100 (flat)", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "ms/service", MaxRatio: 1.5, Baseline: "ms/service", BaselineBench: "BenchmarkScaleAWS/100x100"},
	{Name: "  cost per node, 1,000 / 100 (flat)", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "ms/node", MaxRatio: 1.5, Baseline: "ms/node", BaselineBench: "BenchmarkScaleAWS/100x100"},
	{Name: "  AWS API calls per Service, cloud-provider-aws", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "aws-calls/service"},
	{Name: "  AWS API calls per node, cloud-provider-aws", Bench: "BenchmarkScaleAWS/1000x1000", Unit: "aws-calls/node"},
	{Name: "  AWS API calls per Service at 100 (same provider)", Bench: "BenchmarkScaleAWS/100x100", Unit: "aws-calls/service"},
	{Name: "a class run for real: students (default lab, --prestart)", Bench: "BenchmarkClassRun", Unit: "students", Min: 50},
	{Name: "  every lab up (s)", Bench: "BenchmarkClassRun", Unit: "class-up-s", Max: 300},
	{Name: "  memory the class took (GB)", Bench: "BenchmarkClassRun", Unit: "mem-used-GB"},
	{Name: "  idle: /healthz through the portal p99 (ms)", Bench: "BenchmarkClassRun", Unit: "idle-healthz-p99-ms", Max: 250},
	{Name: "  idle: Node list (kubectl get nodes), slowest (ms)", Bench: "BenchmarkClassRun", Unit: "idle-get-nodes-max-ms", Max: 1000},
	{Name: "  20 LoadBalancers at once: /healthz p99 (ms)", Bench: "BenchmarkClassRun", Unit: "busy-healthz-p99-ms", Max: 250},
	{Name: "  20 LoadBalancers at once: Node list, slowest (ms)", Bench: "BenchmarkClassRun", Unit: "busy-get-nodes-max-ms", Max: 1000},
	{Name: "  20 LoadBalancers at once: slowest EXTERNAL-IP (s)", Bench: "BenchmarkClassRun", Unit: "busy-external-ip-max-s", Max: 10},
	{Name: "event -> 200 websocket clients p99 (ms)", Bench: "BenchmarkFanout200", Unit: "p99-ms", Max: 100},
}

// Budget is one row of the table.
type Budget struct {
	Name  string
	Bench string
	Unit  string
	// Max and Min bound the figure; zero means no bound on that side.
	Max, Min float64
	// Baseline names the metric the figure is compared with, measured in
	// the same run; BaselineBench is its benchmark when not Bench.
	Baseline, BaselineBench string
	// MaxRatio and MinRatio bound figure/baseline instead of the figure
	// itself.
	MaxRatio, MinRatio float64
	// Figure, when set, is shown next to a ratio figure (the absolute
	// value the ratio was taken of).
	Figure string
}
