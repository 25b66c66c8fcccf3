package podruntime

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// The images of kube-system's add-ons (app/sim/kubesystem.go): CoreDNS,
// kube-proxy and the Amazon VPC CNI's aws-node. Their processes print
// what the real ones print at start and then run until stopped. CoreDNS
// listens: on 53 (the data plane asks Listens before it hands a Pod's
// DNS query to a CoreDNS Pod), and its health (8080 /health), ready (8181
// /ready) and prometheus (9153 /metrics) plugins' HTTP ports. The DNS
// answers themselves are lab/dataplane's (dns.go), which reads the
// cluster as CoreDNS's kubernetes plugin does.

// Listens reports whether a process in pod listens on port: what a
// packet for that port finds in the Pod.
func (r *Runtime) Listens(pod *v1.Pod, port int32) bool {
	return runsKnownImages(pod) && r.listenerFor(pod, port) != nil
}

// imageTag is the tag of the container's image ("v1.14.6"), or "".
func (p *proc) imageTag() string {
	ref, _, _ := strings.Cut(p.box.imageRef(), "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ""
}

// cmdCoreDNS is /coredns -conf FILE with kubeadm's Corefile: the server
// block's banner and the version (CoreDNS's coremain prints them on
// stdout), then it serves until stopped; on SIGTERM the health plugin's
// lameduck (5 s in kubeadm's Corefile) is logged as CoreDNS logs it.
func cmdCoreDNS(ctx context.Context, p *proc, args []string) int {
	version := strings.TrimPrefix(p.imageTag(), "v")
	for _, a := range args[1:] {
		if a == "-version" || a == "--version" {
			fmt.Fprintf(p.stdout, "CoreDNS-%s\n", version)
			return 0
		}
	}
	text := func(body string) func(context.Context, dataplane.ServeRequest) dataplane.ServeResult {
		return func(_ context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
			h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
			return dataplane.ServeResult{Status: http.StatusOK, Header: h, Body: []byte(body)}
		}
	}
	ports := []struct {
		port  int32
		path  string
		serve func(context.Context, dataplane.ServeRequest) dataplane.ServeResult
	}{
		// 53 carries DNS, not HTTP: an HTTP request there gets nothing
		// sensible back, as from a DNS server reading TCP.
		{53, "", func(context.Context, dataplane.ServeRequest) dataplane.ServeResult {
			return dataplane.ServeResult{Status: http.StatusBadRequest, Header: http.Header{}}
		}},
		{8080, "/health", text("OK")},
		{8181, "/ready", text("OK")},
		{9153, "/metrics", text("# HELP coredns_build_info A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.\n# TYPE coredns_build_info gauge\ncoredns_build_info{version=\"" + version + "\"} 1\n")},
	}
	for _, pt := range ports {
		serve := pt.serve
		path := pt.path
		stop, err := p.rt.listen(p.box.pod, pt.port, &listener{serve: func(ctx context.Context, req dataplane.ServeRequest) dataplane.ServeResult {
			if path != "" && strings.SplitN(req.URI, "?", 2)[0] != path {
				return dataplane.ServeResult{Status: http.StatusNotFound, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: []byte("404 page not found\n")}
			}
			return serve(ctx, req)
		}})
		if err != nil {
			fmt.Fprintf(p.stdout, "[ERROR] Restart failed: listen tcp :%d: bind: address already in use\n", pt.port)
			return 1
		}
		defer stop()
	}
	fmt.Fprintf(p.stdout, ".:53\nCoreDNS-%s\n", version)
	<-ctx.Done()
	fmt.Fprintf(p.stdout, "[INFO] SIGTERM: Shutting down servers then terminating\n[INFO] plugin/health: Going into lameduck mode for 5s\n")
	return 0
}

// klogLine is one line as klog writes it (I<mmdd hh:mm:ss.micros> pid
// file:line] msg), pid 1 as in a container.
func (p *proc) klogLine(at, msg string) string {
	return fmt.Sprintf("I%s       1 %s] %s\n", p.rt.cfg.Clock.Now().UTC().Format("0102 15:04:05.000000"), at, msg)
}

// cmdKubeProxy is kube-proxy in iptables mode (kubeadm's configuration
// leaves mode empty: iptables on Linux): its start lines with the file
// and line of each log call in k8s.io/kubernetes v1.37.2
// (cmd/kube-proxy/app/server.go, server_linux.go, pkg/proxy/config, and
// client-go's shared_informer.go), then it runs until stopped. The rules
// it would write are lab/dataplane's.
func cmdKubeProxy(ctx context.Context, p *proc, args []string) int {
	pod := p.box.pod
	version := p.imageTag()
	for _, a := range args[1:] {
		if a == "--version" {
			fmt.Fprintf(p.stdout, "Kubernetes %s\n", version)
			return 0
		}
	}
	nodeIP := pod.Status.HostIP
	lines := []struct{ at, msg string }{
		{"server.go:228", fmt.Sprintf(`"Successfully retrieved NodeIPs" NodeIPs=["%s"]`, nodeIP)},
		{"server.go:267", `"kube-proxy running in single-stack mode" ipFamily="IPv4"`},
		{"server_linux.go:144", `"Using iptables Proxier"`},
		{"server.go:530", fmt.Sprintf(`"Version info" version="%s"`, version)},
		{"server.go:532", `"Golang settings" GOGC="" GOMAXPROCS="" GOTRACEBACK=""`},
		{"config.go:200", `"Starting service config controller"`},
		{"shared_informer.go:503", `"Waiting for caches to sync" controller="service config"`},
		{"config.go:106", `"Starting endpoint slice config controller"`},
		{"shared_informer.go:503", `"Waiting for caches to sync" controller="endpoint slice config"`},
		{"config.go:403", `"Starting serviceCIDR config controller"`},
		{"shared_informer.go:503", `"Waiting for caches to sync" controller="serviceCIDR config"`},
		{"config.go:309", `"Starting node config controller"`},
		{"shared_informer.go:503", `"Waiting for caches to sync" controller="node config"`},
		{"shared_informer.go:510", `"Caches are synced" controller="service config"`},
		{"shared_informer.go:510", `"Caches are synced" controller="endpoint slice config"`},
		{"shared_informer.go:510", `"Caches are synced" controller="serviceCIDR config"`},
		{"shared_informer.go:510", `"Caches are synced" controller="node config"`},
	}
	for _, l := range lines {
		p.errorf("%s", p.klogLine(l.at, l.msg))
	}
	<-ctx.Done()
	return 0
}

// cmdAWSNode is the VPC CNI's aws-node container: the entrypoint's JSON
// lines as aws/amazon-vpc-cni-k8s prints them (issue #1930 shows the
// sequence), then the IPAM daemon in the foreground until stopped. The
// lab's kubelet hands out the VPC addresses (lab/kubelet's IPAM).
func cmdAWSNode(ctx context.Context, p *proc, _ []string) int {
	for _, msg := range []string{
		"Validating env variables ...",
		"Install CNI binaries..",
		"Starting IPAM daemon in the background ... ",
		"Checking for IPAM connectivity ... ",
		"Copying CNI plugin binary and config file ... ",
		"Successfully copied CNI plugin binary and config file.",
		"Foregrounding IPAM daemon ...",
	} {
		fmt.Fprintf(p.stdout, `{"level":"info","ts":"%s","caller":"entrypoint.sh","msg":"%s"}`+"\n",
			p.rt.cfg.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z"), msg)
	}
	<-ctx.Done()
	return 0
}
