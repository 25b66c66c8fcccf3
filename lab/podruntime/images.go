package podruntime

import (
	"path"
	"slices"
	"strings"
)

// The image catalogue: what each image the lab knows runs when its
// container starts (its ENTRYPOINT and CMD, as the image's config has
// them) and which commands are on its PATH. A container of an image not
// listed runs like registry.k8s.io/pause (it waits until stopped), has no
// commands, and keeps answering on every port the way the data plane
// always answered for Pods (the lab's echo page); see docs/architecture.md,
// "Pods that run".
//
// Sources: nginx's Dockerfile (docker-library/nginx, Debian): ENTRYPOINT
// /docker-entrypoint.sh, CMD nginx -g "daemon off;"; curlimages/curl:
// ENTRYPOINT /entrypoint.sh, CMD curl; busybox: CMD sh; alpine: CMD
// /bin/sh; agnhost (test/images/agnhost/Dockerfile in
// k8s.io/kubernetes v1.37.2): ENTRYPOINT /agnhost, CMD pause; pause:
// ENTRYPOINT /pause; glibc-dns-testing (formerly jessie-dnsutils,
// test/images/glibc-dns-testing in k8s.io/kubernetes v1.37.2): Debian
// bookworm-slim with dnsutils (dig, host, nslookup) and /coredns, no
// ENTRYPOINT, the base's CMD bash.

type image struct {
	name       string
	entrypoint []string
	cmd        []string
	// shell is the image's sh flavour: "ash" (busybox), "dash" (Debian),
	// "" (no shell).
	shell string
	// bins are the commands on its PATH, by base name, with the
	// directory they live in.
	bins map[string]string
	// hostname is what `hostname` prints: the Pod's name (true) or
	// nothing special.
	prompt string
}

// busyboxApplets is the part of busybox's applets the lab implements.
var busyboxApplets = []string{
	"sh", "echo", "printf", "cat", "env", "printenv", "hostname", "sleep", "true", "false",
	"wget", "nslookup", "ip", "nc", "ls", "date", "uname", "id", "whoami", "grep", "head", "tail", "wc", "pwd", "test", "[", "seq",
}

// debianBins is what the lab implements of nginx's Debian image.
var debianBins = []string{
	"sh", "bash", "echo", "printf", "cat", "env", "printenv", "hostname", "sleep", "true", "false",
	"curl", "ls", "date", "uname", "id", "whoami", "grep", "head", "tail", "wc", "pwd", "test", "[",
}

func binsIn(dir string, names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = dir
	}
	return m
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var catalogue = []struct {
	// match is the repository (registry host and docker.io/library
	// removed, no tag or digest).
	match func(repo string) bool
	img   image
}{
	{func(r string) bool { return r == "nginx" || strings.HasSuffix(r, "/nginx") }, image{
		name: "nginx", entrypoint: []string{"/docker-entrypoint.sh"}, cmd: []string{"nginx", "-g", "daemon off;"},
		shell: "dash", bins: merge(binsIn("/bin", debianBins...), binsIn("/usr/sbin", "nginx"), binsIn("/", "docker-entrypoint.sh")),
		prompt: "# ",
	}},
	{func(r string) bool { return r == "curlimages/curl" }, image{
		name: "curlimages/curl", entrypoint: []string{"/entrypoint.sh"}, cmd: []string{"curl"},
		shell: "ash", bins: merge(binsIn("/bin", busyboxApplets...), binsIn("/usr/bin", "curl"), binsIn("/", "entrypoint.sh")),
		prompt: "~ $ ",
	}},
	{func(r string) bool { return r == "busybox" }, image{
		name: "busybox", cmd: []string{"sh"}, shell: "ash", bins: binsIn("/bin", busyboxApplets...), prompt: "/ # ",
	}},
	{func(r string) bool { return r == "alpine" }, image{
		name: "alpine", cmd: []string{"/bin/sh"}, shell: "ash", bins: binsIn("/bin", busyboxApplets...), prompt: "/ # ",
	}},
	{func(r string) bool { return r == "e2e-test-images/agnhost" || strings.HasSuffix(r, "/agnhost") }, image{
		name: "agnhost", entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
		shell: "ash", bins: merge(binsIn("/bin", busyboxApplets...), binsIn("/usr/bin", "curl", "dig", "host", "bash", "getent"), binsIn("/", "agnhost")),
		prompt: "/ # ",
	}},
	// Upstream's e2e DNS tests run their glibc queriers in it
	// (test/e2e/network/dns.go, imageutils.GlibcDnsTesting).
	{func(r string) bool {
		return strings.HasSuffix(r, "/glibc-dns-testing") || strings.HasSuffix(r, "/jessie-dnsutils")
	}, image{
		name: "glibc-dns-testing", cmd: []string{"bash"}, shell: "dash",
		bins:   merge(binsIn("/bin", debianBins...), binsIn("/usr/bin", "dig", "host", "nslookup", "getent", "seq")),
		prompt: "# ",
	}},
	// kube-system's add-ons (system.go): coredns/coredns (ENTRYPOINT
	// /coredns), kube-proxy (kubeadm's DaemonSet gives the command
	// /usr/local/bin/kube-proxy), amazon-k8s-cni (aws/amazon-vpc-cni-k8s
	// scripts/dockerfiles/Dockerfile.release: ENTRYPOINT ["/app/aws-vpc-cni"],
	// the Go program that replaced entrypoint.sh and starts ipamd).
	// Distroless images: no shell.
	{func(r string) bool { return r == "coredns/coredns" || strings.HasSuffix(r, "/coredns/coredns") }, image{
		name: "coredns", entrypoint: []string{"/coredns"}, bins: binsIn("/", "coredns"),
	}},
	{func(r string) bool { return r == "kube-proxy" || strings.HasSuffix(r, "/kube-proxy") }, image{
		name: "kube-proxy", entrypoint: []string{"/usr/local/bin/kube-proxy"}, bins: binsIn("/usr/local/bin", "kube-proxy"),
	}},
	{func(r string) bool { return r == "amazon-k8s-cni" || strings.HasSuffix(r, "/amazon-k8s-cni") }, image{
		name: "amazon-k8s-cni", entrypoint: []string{"/app/aws-vpc-cni"}, bins: binsIn("/app", "aws-vpc-cni"),
	}},
	{func(r string) bool { return r == "pause" || strings.HasSuffix(r, "/pause") }, image{
		name: "pause", entrypoint: []string{"/pause"}, bins: binsIn("/", "pause"),
	}},
}

// unknownImage is any image the catalogue does not list.
var unknownImage = image{name: "", entrypoint: []string{"/pause"}, bins: map[string]string{}}

// repository is ref without registry host, docker.io/library/, tag and
// digest: "docker.io/library/nginx:1.29" -> "nginx".
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	if first, rest, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		ref = rest
	}
	ref = strings.TrimPrefix(ref, "library/")
	return ref
}

// lookupImage finds ref in the catalogue; ok is false for an image the
// lab does not know.
func lookupImage(ref string) (image, bool) {
	repo := repository(ref)
	for _, e := range catalogue {
		if e.match(repo) {
			return e.img, true
		}
	}
	return unknownImage, false
}

// argv is what a container runs, by the rules of the Pod spec (command
// replaces the entrypoint and drops CMD; args replace CMD).
func argv(img image, command, args []string) []string {
	switch {
	case len(command) > 0:
		return append(slices.Clone(command), args...)
	case len(args) > 0:
		return append(slices.Clone(img.entrypoint), args...)
	}
	return append(slices.Clone(img.entrypoint), img.cmd...)
}

// lookPath finds name on the image's PATH (a bare name) or at its path
// (one with a slash).
func (img image) lookPath(name string) (string, bool) {
	if strings.Contains(name, "/") {
		base := path.Base(name)
		dir, ok := img.bins[base]
		if !ok {
			return "", false
		}
		// /bin and /usr/bin hold the same on these images.
		if d := path.Dir(path.Clean(name)); d == dir || (d == "/usr/bin" || d == "/bin" || d == "/usr/local/bin" || d == "/sbin" || d == "/usr/sbin") && dir != "/" {
			return path.Clean(name), true
		}
		return "", false
	}
	dir, ok := img.bins[name]
	if !ok {
		return "", false
	}
	return path.Join(dir, name), true
}
