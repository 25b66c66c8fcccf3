// Package podruntime is the lab's container runtime: it runs the
// containers of the simulated kubelets' Pods as goroutines of the lab
// with each Pod's network identity. An image is a row of a small
// catalogue (images.go) whose commands are Go functions (commands.go); sh
// is a POSIX shell over mvdan.cc/sh/v3's parser and expander (shell.go);
// files live in the container's memory (fs.go); every connection goes
// through lab/dataplane's routing to a simulated address. Nothing a
// student types reaches the host: no os/exec, no host file, no socket
// but the data plane's. Resource use is bounded (Limits).
package podruntime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/envvars"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// Network is the cluster's network as a Pod's processes see it: the data
// plane's routing (*dataplane.Dataplane implements it).
type Network interface {
	// FromPod sends one HTTP request from a Pod through the network.
	FromPod(ctx context.Context, r dataplane.PodRequest) (dataplane.PodResponse, error)
	// Lookup answers a DNS query from a Pod.
	Lookup(from *v1.Pod, name string, qtype uint16) (dataplane.DNSAnswer, error)
	// ServicesFor lists the Services whose variables a Pod in namespace
	// ns gets (the kubelet's rule: its namespace's, and the master
	// Service "kubernetes" of default).
	ServicesFor(ns string) []*v1.Service
	// DNSServer is the cluster DNS address written to resolv.conf.
	DNSServer() string
	// DefaultAnswer is the data plane's answer for a Pod whose image the
	// runtime does not know (port-forward to it).
	DefaultAnswer(dataplane.ServeRequest) dataplane.ServeResult
}

// Limits bound what the runtime's processes may use.
type Limits struct {
	// ProcsPerPod and ProcsPerLab bound the processes running at once
	// (containers' main processes and exec sessions). Defaults 16, 512.
	ProcsPerPod, ProcsPerLab int
	// StepsPerSecond is how many shell statements and commands one
	// process runs per second at most (a `while true` loop is throttled,
	// not spinning). Default 2,000.
	StepsPerSecond int
	// MaxScript is the longest script or command line. Default 16 KiB.
	MaxScript int
	// MaxEnv bounds a process's variables. Default 256 KiB.
	MaxEnv int
	// MaxWord bounds one command's expanded arguments. Default 256 KiB.
	MaxWord int
	// MaxCmdSubst bounds the output a $(...) keeps. Default 64 KiB.
	MaxCmdSubst int
	// MaxBody bounds a response body a command keeps. Default 1 MiB.
	MaxBody int
	// MaxFile and MaxFiles bound a container's written files. Defaults
	// 64 KiB and 256 KiB.
	MaxFile, MaxFiles int
	// ExecTimeout bounds an exec session that has no stdin (kubectl exec
	// without -i). Default 10 min.
	ExecTimeout time.Duration
}

func (l *Limits) setDefaults() {
	l.ProcsPerPod = cmp.Or(l.ProcsPerPod, 16)
	l.ProcsPerLab = cmp.Or(l.ProcsPerLab, 512)
	l.StepsPerSecond = cmp.Or(l.StepsPerSecond, 2000)
	l.MaxScript = cmp.Or(l.MaxScript, 16<<10)
	l.MaxEnv = cmp.Or(l.MaxEnv, 256<<10)
	l.MaxWord = cmp.Or(l.MaxWord, 256<<10)
	l.MaxCmdSubst = cmp.Or(l.MaxCmdSubst, 64<<10)
	l.MaxBody = cmp.Or(l.MaxBody, 1<<20)
	l.MaxFile = cmp.Or(l.MaxFile, 64<<10)
	l.MaxFiles = cmp.Or(l.MaxFiles, 256<<10)
	l.ExecTimeout = cmp.Or(l.ExecTimeout, 10*time.Minute)
}

// Config configures a Runtime.
type Config struct {
	Network Network // required
	Limits  Limits
	Clock   clock.WithTicker // default clock.RealClock{}
	Logger  *slog.Logger     // default: discard
}

// Runtime runs containers; it implements kubelet.PodRuntime.
type Runtime struct {
	cfg Config
	lab chan struct{} // one token per running process in the lab

	mu   sync.Mutex
	pods map[types.UID]*podState
}

var (
	_ kubelet.PodRuntime   = (*Runtime)(nil)
	_ kubelet.PodConnector = (*Runtime)(nil)
	_ kubelet.PodForgetter = (*Runtime)(nil)
)

type podState struct {
	procs     int
	listeners map[portKey]*listener // port and transport -> what serves it
	// volumes are the Pod's emptyDirs, by volume name, shared by the
	// containers that mount them; they outlive container restarts and
	// go with the Pod (ForgetPod).
	volumes map[string]*memFS
}

// idle reports whether nothing of the Pod remains; the caller holds r.mu.
func (ps *podState) idle() bool {
	return ps.procs == 0 && len(ps.listeners) == 0 && len(ps.volumes) == 0
}

// ForgetPod drops what the runtime keeps of a Pod whose containers the
// kubelet stopped for good: its volumes.
func (r *Runtime) ForgetPod(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ps := r.pods[uid]; ps != nil {
		ps.volumes = nil
		if ps.idle() {
			delete(r.pods, uid)
		}
	}
}

// New builds a Runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Network == nil {
		return nil, errors.New("podruntime: a Network is required")
	}
	cfg.Limits.setDefaults()
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{cfg: cfg, lab: make(chan struct{}, cfg.Limits.ProcsPerLab), pods: map[types.UID]*podState{}}, nil
}

var errTooManyProcs = errors.New("too many processes")

// admit takes a process slot for pod, or fails when the Pod or the lab
// has no slot left.
func (r *Runtime) admit(pod *v1.Pod) (func(), error) {
	select {
	case r.lab <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: the lab runs %d already", errTooManyProcs, r.cfg.Limits.ProcsPerLab)
	}
	r.mu.Lock()
	ps := r.pods[pod.UID]
	if ps == nil {
		ps = &podState{}
		r.pods[pod.UID] = ps
	}
	if ps.procs >= r.cfg.Limits.ProcsPerPod {
		r.mu.Unlock()
		<-r.lab
		return nil, fmt.Errorf("%w: pod %s runs %d already", errTooManyProcs, pod.Name, r.cfg.Limits.ProcsPerPod)
	}
	ps.procs++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		ps.procs--
		if ps.idle() {
			delete(r.pods, pod.UID)
		}
		r.mu.Unlock()
		<-r.lab
	}, nil
}

// box is one container as its processes see it: the Pod, the image, the
// files, the environment the kubelet gives it.
type box struct {
	pod       *v1.Pod
	container string
	img       image
	known     bool
	fs        *memFS
	env       []string // NAME=value
	hostname  string
	// create opens a file curl -o writes: nil is the container's own
	// files; Curl (hostcurl.go) gives the student's shell's.
	create func(path string) (io.Writer, error)
}

func (b *box) lookPath(name string) (string, bool) { return b.img.lookPath(name) }

func (b *box) prompt(dir string) string {
	if b.img.prompt == "" {
		return "$ "
	}
	if b.img.prompt == "~ $ " && dir != "/home/curl_user" {
		return strings.Replace(b.img.prompt, "~", dir, 1)
	}
	return b.img.prompt
}

// newBox builds container c of pod as its image and the kubelet make it.
func (r *Runtime) newBox(pod *v1.Pod, c *v1.Container) *box {
	img, known := lookupImage(c.Image)
	b := &box{pod: pod, container: c.Name, img: img, known: known, hostname: podHostname(pod)}
	b.env = r.containerEnv(pod, c, b.hostname)
	b.fs = newMemFS(r.files(pod, img, b.hostname), writableDirs(img), r.cfg.Limits.MaxFile, r.cfg.Limits.MaxFiles)
	b.fs.mounts = r.mounts(pod, c)
	return b
}

// mounts are the emptyDir volumes container c mounts, by mount path. A
// volume is bounded as one container's written files are (MaxFile,
// MaxFiles); other volume kinds are not mounted.
func (r *Runtime) mounts(pod *v1.Pod, c *v1.Container) map[string]*memFS {
	var out map[string]*memFS
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Spec.Volumes[i].EmptyDir == nil || !strings.HasPrefix(m.MountPath, "/") || m.SubPath != "" {
			continue
		}
		r.mu.Lock()
		ps := r.pods[pod.UID]
		if ps == nil {
			ps = &podState{}
			r.pods[pod.UID] = ps
		}
		if ps.volumes == nil {
			ps.volumes = map[string]*memFS{}
		}
		v := ps.volumes[m.Name]
		if v == nil {
			v = newVolume(r.cfg.Limits.MaxFile, r.cfg.Limits.MaxFiles)
			ps.volumes[m.Name] = v
		}
		r.mu.Unlock()
		if out == nil {
			out = map[string]*memFS{}
		}
		out[path.Clean(m.MountPath)] = v
	}
	return out
}

// podHostname is the Pod's hostname: spec.hostname, else its name (cut to
// 63 characters, as the kubelet's GeneratePodHostNameAndDomain does).
func podHostname(pod *v1.Pod) string {
	h := cmp.Or(pod.Spec.Hostname, pod.Name)
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// containerEnv is the environment the kubelet gives container c
// (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables, v1.37.2): PATH and
// HOSTNAME, the Service variables (pkg/kubelet/envvars, used here), then
// the container's own env with $(VAR) references expanded. valueFrom
// supports the Pod's own fields; ConfigMap and Secret references are
// left empty.
func (r *Runtime) containerEnv(pod *v1.Pod, c *v1.Container, hostname string) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	set("HOSTNAME", hostname)
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var svcs []*v1.Service
	for _, s := range r.cfg.Network.ServicesFor(pod.Namespace) {
		if s.Namespace == pod.Namespace && links || s.Namespace == "default" && s.Name == "kubernetes" {
			svcs = append(svcs, s)
		}
	}
	for _, e := range envvars.FromServices(svcs) {
		set(e.Name, e.Value)
	}
	mapping := expansion.MappingFuncFor(vars)
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = fieldRef(pod, e.ValueFrom.FieldRef.FieldPath)
		} else if v != "" {
			v = expansion.Expand(v, mapping)
		}
		set(e.Name, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

func fieldRef(pod *v1.Pod, p string) string {
	switch p {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	case "status.podIP":
		return pod.Status.PodIP
	case "status.hostIP":
		return pod.Status.HostIP
	}
	return ""
}

// files are the container's files: what the kubelet mounts (hosts,
// hostname, resolv.conf) and what the image holds that the lab knows of.
func (r *Runtime) files(pod *v1.Pod, img image, hostname string) map[string]string {
	f := map[string]string{
		"/etc/hostname":    hostname + "\n",
		"/etc/hosts":       hostsFile(pod, hostname),
		"/etc/resolv.conf": r.resolvConf(pod),
	}
	switch img.name {
	case "nginx":
		f["/usr/share/nginx/html/index.html"] = dataplane.NginxWelcome
		f["/etc/os-release"] = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n"
	case "busybox", "":
	default:
		if img.shell == "ash" {
			f["/etc/os-release"] = "NAME=\"Alpine Linux\"\nID=alpine\nPRETTY_NAME=\"Alpine Linux v3.22\"\n"
		}
	}
	return f
}

func writableDirs(img image) []string {
	w := []string{"/tmp"}
	if img.name == "nginx" {
		w = append(w, "/usr/share/nginx/html")
	}
	return w
}

// hostsFile is the kubelet-managed /etc/hosts (pkg/kubelet/kubelet_pods.go,
// managedHostsFileContent).
func hostsFile(pod *v1.Pod, hostname string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if ip := pod.Status.PodIP; ip != "" {
		if pod.Spec.Subdomain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.cluster.local\t%s\n", ip, hostname, pod.Spec.Subdomain, pod.Namespace, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	for _, h := range pod.Spec.HostAliases {
		fmt.Fprintf(&b, "\n# Entries added by HostAliases.\n%s\t%s\n", h.IP, strings.Join(h.Hostnames, "\t"))
	}
	return b.String()
}

// resolvConf is what the kubelet writes (pkg/kubelet/network/dns/dns.go,
// GetPodDNS by getPodDNSType): for ClusterFirst the cluster DNS server,
// search <ns>.svc.<domain> svc.<domain> <domain>, options ndots:5; for
// Default (and the host network without ClusterFirstWithHostNet) the
// node's own file (a Network that knows it: lab/dataplane's
// NodeResolvConf); for None the Pod's dnsConfig alone.
func (r *Runtime) resolvConf(pod *v1.Pod) string {
	server := r.cfg.Network.DNSServer()
	switch {
	case pod.Spec.DNSPolicy == v1.DNSNone:
		var b strings.Builder
		if c := pod.Spec.DNSConfig; c != nil {
			if len(c.Searches) > 0 {
				fmt.Fprintf(&b, "search %s\n", strings.Join(c.Searches, " "))
			}
			for _, ns := range c.Nameservers {
				fmt.Fprintf(&b, "nameserver %s\n", ns)
			}
			var opts []string
			for _, o := range c.Options {
				if o.Value != nil {
					opts = append(opts, o.Name+":"+*o.Value)
				} else {
					opts = append(opts, o.Name)
				}
			}
			if len(opts) > 0 {
				fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
			}
		}
		return b.String()
	case pod.Spec.DNSPolicy == v1.DNSDefault || (pod.Spec.HostNetwork && pod.Spec.DNSPolicy != v1.DNSClusterFirstWithHostNet):
		if n, ok := r.cfg.Network.(interface{ NodeResolvConf() string }); ok {
			return n.NodeResolvConf()
		}
		return "nameserver " + server + "\n"
	}
	return fmt.Sprintf("search %s.svc.cluster.local svc.cluster.local cluster.local\nnameserver %s\noptions ndots:5\n", pod.Namespace, server)
}

// Run runs container c of pod: the image's program, as the spec says.
func (r *Runtime) Run(ctx context.Context, pod *v1.Pod, c *v1.Container, stdio kubelet.Stdio) kubelet.Exit {
	release, err := r.admit(pod)
	if err != nil {
		return kubelet.Exit{Code: 128, Reason: "StartError", Message: "failed to create containerd task: " + err.Error()}
	}
	defer release()
	b := r.newBox(pod, c)
	args := argv(b.img, c.Command, c.Args)
	args = expandKubeletRefs(args, b.env)
	if len(args) == 0 {
		return kubelet.Exit{Code: 128, Reason: "StartError", Message: startError("no command specified")}
	}
	if _, ok := b.lookPath(args[0]); !ok && b.known {
		return kubelet.Exit{Code: 128, Reason: "StartError", Message: startError(fmt.Sprintf("exec: %q: executable file not found in $PATH", args[0]))}
	}
	if !b.known {
		// An image the lab does not know: it runs, doing nothing, until
		// it is stopped (what its process does is unknown to the lab).
		<-ctx.Done()
		return kubelet.Exit{Code: 137}
	}
	p := r.newProc(b, stdio)
	code := p.runCommand(ctx, args, false)
	if ctx.Err() != nil {
		// Stopped: what a process killed by the runtime reports.
		return kubelet.Exit{Code: int32(cmp.Or(code, 137))}
	}
	return kubelet.Exit{Code: int32(code)}
}

// startError is containerd's and runc's wording for a container whose
// process cannot start (runc's "unable to start container process" under
// containerd's task creation).
func startError(why string) string {
	return "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: " + why + ": unknown"
}

// execError is runc's wording for an exec whose command cannot start.
func execError(why string) string {
	return "OCI runtime exec failed: exec failed: unable to start container process: " + why + ": unknown"
}

// expandKubeletRefs expands $(VAR) in command and args with the
// container's environment, as the kubelet does before it starts them.
func expandKubeletRefs(args, env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	mapping := expansion.MappingFuncFor(vars)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expansion.Expand(a, mapping)
	}
	return out
}

// Exec runs cmd in container c of pod (kubectl exec).
func (r *Runtime) Exec(ctx context.Context, pod *v1.Pod, c *v1.Container, cmd []string, stdio kubelet.Stdio) kubelet.Exit {
	b := r.newBox(pod, c)
	if _, ok := b.lookPath(cmd[0]); !ok {
		fmt.Fprintln(errOut(stdio), execError(fmt.Sprintf("exec: %q: executable file not found in $PATH", cmd[0])))
		return kubelet.Exit{Code: 126}
	}
	release, err := r.admit(pod)
	if err != nil {
		fmt.Fprintln(errOut(stdio), execError(err.Error()))
		return kubelet.Exit{Code: 126}
	}
	defer release()
	if stdio.Stdin == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Limits.ExecTimeout)
		defer cancel()
	}
	p := r.newProc(b, stdio)
	return kubelet.Exit{Code: int32(p.runCommand(ctx, cmd, false))}
}

func errOut(s kubelet.Stdio) io.Writer {
	if s.Stderr != nil {
		return s.Stderr
	}
	if s.Stdout != nil {
		return s.Stdout
	}
	return io.Discard
}

// proc is one running process.
type proc struct {
	rt     *Runtime
	box    *box
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	tty    bool
	env    *environ
	dir    string
	meter  *meter
}

func (r *Runtime) newProc(b *box, stdio kubelet.Stdio) *proc {
	out := stdio.Stdout
	if out == nil {
		out = io.Discard
	}
	errw := stdio.Stderr
	if errw == nil {
		errw = out
	}
	return &proc{
		rt: r, box: b, stdin: stdio.Stdin, stdout: out, stderr: errw, tty: stdio.TTY,
		env: newEnviron(r.cfg.Limits.MaxEnv, b.env), dir: "/",
		meter: &meter{rate: r.cfg.Limits.StepsPerSecond, clock: r.cfg.Clock},
	}
}

// with is a copy of p with other standard streams.
func (p *proc) with(in io.Reader, out io.Writer) *proc {
	q := *p
	q.stdin, q.stdout = in, out
	return &q
}

func (p *proc) errorf(format string, a ...any) { fmt.Fprintf(p.stderr, format, a...) }

func (p *proc) abs(name string) string { return cleanPath(p.dir, name) }

func (p *proc) shellName() string { return "sh" }

// step charges one step to the process's meter.
func (p *proc) step(ctx context.Context) error { return p.meter.step(ctx) }

// runCommand runs args as the image runs a program; fromShell says
// whether a shell asked (its "not found" wording) rather than the runtime.
func (p *proc) runCommand(ctx context.Context, args []string, fromShell bool) int {
	if err := p.step(ctx); err != nil {
		return 143
	}
	name := args[0]
	if _, ok := p.box.lookPath(name); !ok {
		if fromShell {
			if p.box.img.shell == "dash" {
				p.errorf("sh: 1: %s: not found\n", name)
			} else {
				p.errorf("sh: %s: not found\n", name)
			}
			return 127
		}
		p.errorf("%s\n", execError(fmt.Sprintf("exec: %q: executable file not found in $PATH", name)))
		return 127
	}
	base := name[strings.LastIndex(name, "/")+1:]
	cmd, ok := commands[base]
	if !ok {
		p.errorf("%s: not implemented in the lab\n", base)
		return 126
	}
	return cmd(ctx, p, args)
}

// meter throttles a process to rate steps per second: a busy loop sleeps
// instead of spinning a core. A pipeline's stages share their shell's
// meter, so it is safe for concurrent use.
type meter struct {
	rate  int
	clock clock.Clock
	mu    sync.Mutex
	n     int
	start time.Time
}

func (m *meter) step(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.n++
	if m.n < max(m.rate/10, 1) {
		m.mu.Unlock()
		return nil
	}
	now := m.clock.Now()
	if m.start.IsZero() {
		m.start, m.n = now, 0
		m.mu.Unlock()
		return nil
	}
	wait := time.Duration(m.n)*time.Second/time.Duration(m.rate) - now.Sub(m.start)
	m.start, m.n = now.Add(max(wait, 0)), 0
	m.mu.Unlock()
	if wait > 0 {
		return sleepCtx(ctx, m.clock, wait)
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
