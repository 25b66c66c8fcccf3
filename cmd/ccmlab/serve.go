package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ccmlab/ccmlab/app"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/profile"
)

type serveOptions struct {
	listen       string
	dataDir      string
	nodes        int
	verbosity    int
	profile      string
	controllers  string
	addons       string
	token        string
	allowHosts   []string
	cloudLatency time.Duration
	kubeconfig   string
	clusterCIDR  string
	// bareAPIServer is the cold-start benchmark's baseline: etcd and
	// kube-apiserver only.
	bareAPIServer bool
	// bareControlPlane is the idle benchmark's baseline: the control
	// plane as the lab runs it, without the lab.
	bareControlPlane bool
	// pprof is a loopback address for Go's runtime profiles; empty is off.
	pprof string
	// awsListen is the loopback address of the AWS wire API (lab/awsapi).
	awsListen string
	// awsProvider is the CCM's provider on the aws profile: lab or upstream.
	awsProvider string
	// restart: the page may restart the lab into the profile or add-ons an
	// exercise needs (off in a classroom's labs).
	restart bool
	// memoryLimit is the Go soft memory limit as a quantity ("1Gi", "0"
	// for none); maxOpenFiles the RLIMIT_NOFILE (0: as inherited). A
	// classroom sets both for each lab (memory.go applies them).
	memoryLimit  string
	maxOpenFiles int
	// lbAddresses: the low-port mode (lab/dataplane/lowports).
	lbAddresses bool
}

func defaultServeOptions() *serveOptions {
	return &serveOptions{listen: "127.0.0.1:8080", dataDir: ".ccmlab", nodes: sim.DefaultNodes, profile: sim.DefaultProfile, token: os.Getenv("CCMLAB_TOKEN"), awsListen: "127.0.0.1:0", restart: true,
		memoryLimit: resource.NewQuantity(app.DefaultMemoryLimit, resource.BinarySI).String()}
}

func (o *serveOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listen, "listen", o.listen, "address of the web view and API")
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "where the lab keeps its state (etcd, cloud, kubeconfig)")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "number of worker instances (nodes) the lab launches on first start; the embedded control plane adds its own control-plane node")
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "log verbosity of the Kubernetes components (0 = quiet)")
	fs.StringVar(&o.profile, "profile", o.profile, "cloud profile: "+strings.Join(profile.Names(), ", "))
	fs.StringVar(&o.controllers, "controllers", o.controllers, "CCM controllers enabled at start: a comma list of node,nodelifecycle,route,service, or none (default: all the profile has)")
	fs.StringVar(&o.addons, "addons", o.addons, "add-ons: lbc (a load-balancer-controller for loadBalancerClass service.k8s.aws/nlb, ip targets)")
	fs.StringVar(&o.token, "token", o.token, "bearer token required on every request (required when --listen is not loopback; env CCMLAB_TOKEN)")
	fs.StringSliceVar(&o.allowHosts, "allow-host", o.allowHosts, "another host name the lab answers to besides loopback and the --listen host (an Ingress's, a Service's DNS name); requests naming any other Host are refused")
	fs.DurationVar(&o.cloudLatency, "cloud-latency", o.cloudLatency, "delay added to every cloud API call, for slow-motion demos")
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "attach to the existing cluster in this kubeconfig instead of embedding one (a throwaway one, e.g. kind: it should allocate node CIDRs and run no other CCM)")
	fs.StringVar(&o.clusterCIDR, "cluster-cidr", o.clusterCIDR, "with --kubeconfig: the cluster's Pod network (default "+app.DefaultAttachedClusterCIDR+", kind's)")
	fs.BoolVar(&o.bareAPIServer, "bare-apiserver", false, "start only etcd and kube-apiserver (benchmark baseline)")
	_ = fs.MarkHidden("bare-apiserver")
	fs.BoolVar(&o.bareControlPlane, "bare-control-plane", false, "start only etcd, kube-apiserver, kube-controller-manager and kube-scheduler, without the lab (benchmark baseline)")
	_ = fs.MarkHidden("bare-control-plane")
	fs.StringVar(&o.awsListen, "aws-listen", o.awsListen, "loopback address of the simulated cloud's AWS API (EC2, ELB, ELBv2) for the aws CLI; port 0 picks a free one, written to <data-dir>/aws.env")
	awsDefault, _ := profile.Get("aws")
	fs.StringVar(&o.awsProvider, "aws-provider", o.awsProvider, fmt.Sprintf("the CCM's cloud provider on the aws and vpc-cni profiles: lab (the lab's own) or upstream (k8s.io/cloud-provider-aws talking to the lab's AWS API); empty: the profile's default (%s on aws)",
		sim.DefaultAWSProvider(awsDefault)))
	fs.BoolVar(&o.restart, "restart", o.restart, "let the page restart the lab into the profile or add-ons an exercise needs (a fresh cluster in the same data dir, exercise progress kept; the old state moves to <data-dir>.previous); never with --kubeconfig")
	fs.StringVar(&o.memoryLimit, "memory-limit", o.memoryLimit, "the lab's Go soft memory limit, as a quantity (768Mi, 2Gi; 0: none); GOMEMLIMIT in the environment wins")
	fs.IntVar(&o.maxOpenFiles, "max-open-files", o.maxOpenFiles, "the lab's limit of open files and sockets (RLIMIT_NOFILE, soft and hard; 0: as inherited)")
	fs.BoolVar(&o.lbAddresses, "lb-addresses", false, "give each internet-facing load balancer its own loopback address (127.0.1.x) on its real ports (80, ...) and serve DNS for their names on 127.0.2.53:53, so any client whose resolver is the lab's reaches http://<hostname>/; needs ports below 1024 (root, CAP_NET_BIND_SERVICE, a container) and Linux")
	fs.StringVar(&o.pprof, "pprof", "", "serve Go runtime profiles (/debug/pprof/) on this loopback address (off by default)")
	_ = fs.MarkHidden("pprof")
}

// config maps the flags to the app.Config they choose and checks it with
// app.Config.Validate, the one place the lab's rules live. Parsing a flag
// (a profile's name, a list of controllers) is the CLI's job; whether the
// result makes a lab is app's, whose errors come back with flag names.
func (o *serveOptions) config() (app.Config, error) {
	p, err := profile.Get(o.profile)
	if err != nil {
		return app.Config{}, fmt.Errorf("--profile: %w", err)
	}
	enabled, err := p.ParseControllers(o.controllers)
	if err != nil {
		return app.Config{}, err
	}
	var addons []string
	if o.addons != "" {
		addons = strings.Split(o.addons, ",")
	}
	mem, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return app.Config{}, fmt.Errorf("--memory-limit %q: not a quantity such as 768Mi or 2Gi (0: none)", o.memoryLimit)
	}
	cfg := app.Config{
		MemoryLimit: mem.Value(), MaxOpenFiles: o.maxOpenFiles,
		DataDir: o.dataDir, Profile: p, Controllers: enabled, Addons: addons,
		Nodes: o.nodes, CloudLatency: o.cloudLatency, Verbosity: o.verbosity, Token: o.token,
		Listen: o.listen, AllowedHosts: o.allowHosts, AWSListen: o.awsListen, AWSProvider: o.awsProvider,
		Kubeconfig: o.kubeconfig, ClusterCIDR: o.clusterCIDR, BareAPIServer: o.bareAPIServer,
		BareControlPlane: o.bareControlPlane,
	}
	if err := cfg.Validate(); err != nil {
		return app.Config{}, flagError(err)
	}
	return cfg, nil
}

// flagNames names the flag that sets each field of app.Config, so that
// app.Config.Validate's errors read as the student typed the command.
var flagNames = map[string]string{
	"DataDir": "--data-dir", "Profile": "--profile", "Controllers": "--controllers", "Addons": "--addons",
	"Nodes": "--nodes", "CloudLatency": "--cloud-latency", "Verbosity": "-v", "Token": "--token",
	"Listen": "--listen", "AllowedHosts": "--allow-host", "AWSListen": "--aws-listen", "AWSProvider": "--aws-provider",
	"Kubeconfig": "--kubeconfig", "ClusterCIDR": "--cluster-cidr", "BareAPIServer": "--bare-apiserver", "BareControlPlane": "--bare-control-plane",
	"MemoryLimit": "--memory-limit", "MaxOpenFiles": "--max-open-files",
}

// inDetail renames the fields an error's detail mentions. The token can
// also come from the environment, which a student setting it should know.
var inDetail = func() *strings.Replacer {
	var pairs []string
	for f, flag := range flagNames {
		if f == "Token" {
			flag = "--token (or CCMLAB_TOKEN)"
		}
		pairs = append(pairs, f, flag)
	}
	return strings.NewReplacer(pairs...)
}()

// flagError rewrites app.Config.Validate's field errors with flag names,
// on one line (main prints one line per failure): "--nodes -1: must be
// between 0 and 1000".
func flagError(err error) error {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return err
	}
	var lines []string
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			lines = append(lines, e.Error())
			continue
		}
		name, _, _ := strings.Cut(fe.Field, "[")
		flag := cmp.Or(flagNames[name], fe.Field)
		detail := cmp.Or(inDetail.Replace(fe.Detail), fe.Type.String())
		switch fe.Type {
		case field.ErrorTypeInvalid, field.ErrorTypeNotSupported:
			v := fe.BadValue
			if s, ok := v.(string); ok {
				v = strconv.Quote(s)
			}
			lines = append(lines, fmt.Sprintf("%s %v: %s", flag, v, detail))
		default:
			lines = append(lines, fmt.Sprintf("%s: %s", flag, detail))
		}
	}
	return errors.New(strings.Join(lines, "; "))
}

// restartRequest is what the page asked the lab to restart into.
type restartRequest struct {
	profile string
	addons  []string
}

// serve runs the lab until ctx ends. When the page asks for a restart
// into another profile or other add-ons, the lab stops, its data dir is
// made fresh (the exercise progress kept) and the process executes itself
// again with the new flags: the embedded kube-apiserver registers global
// state (informer names, metrics) that a second start in one process
// refuses, so a restart is a new process image with the same PID, on the
// same address.
func serve(ctx context.Context, o *serveOptions, out io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	stopPprof, err := startPprof(o.pprof)
	if err != nil {
		return err
	}
	defer stopPprof()
	// The lab's own log stays at warnings unless -v asks for more, so the
	// progress lines and the ready line are what a student sees.
	level := slog.LevelWarn
	if o.verbosity > 0 {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	lim, err := applyLimits(cfg, processLimits())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ccmlab limits: %s\n", lim)
	gcReady, err := tuneGC(ctx, logger.With("component", "gctune"))
	if err != nil {
		return err
	}
	next, err := serveOnce(ctx, o, out, logger, func() { go gcReady() })
	if err != nil || next == nil || ctx.Err() != nil {
		return err
	}
	fmt.Fprintf(out, "ccmlab restarts with --profile %s --addons %q (exercise progress kept; the previous state is in %s.previous)\n",
		next.profile, strings.Join(next.addons, ","), filepath.Clean(o.dataDir))
	if err := freshDataDir(o.dataDir); err != nil {
		return err
	}
	stopPprof()
	return reexec(restartArgs(os.Args, o, next))
}

// restartArgs are the process's arguments with the restart's flags after
// them (pflag keeps a flag's last value): the profile and add-ons asked
// for, the profile's default controllers, the address actually bound, and
// on a profile change the new profile's default AWS provider.
func restartArgs(args []string, o *serveOptions, next *restartRequest) []string {
	out := append(slices.Clone(args), "--profile="+next.profile, "--addons="+strings.Join(next.addons, ","), "--controllers=", "--listen="+o.listen)
	if next.profile != o.profile {
		out = append(out, "--aws-provider=")
	}
	return out
}

// reexec replaces the process with a new image of the same binary.
func reexec(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return fmt.Errorf("restart: %w", syscall.Exec(exe, args, os.Environ()))
}

// serveOnce runs one lab; it returns the restart the page asked for, or
// nil when the lab stopped for another reason.
func serveOnce(ctx context.Context, o *serveOptions, out io.Writer, logger *slog.Logger, gcReady func()) (*restartRequest, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	// Bind before touching anything, so a busy port fails fast and leaves
	// the data dir as it was.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", o.listen, errors.Unwrap(err))
	}
	// A restart binds the same port again, even when --listen said 0.
	o.listen = ln.Addr().String()
	cfg.Addr = studentAddr(ln.Addr())
	cfg.Logger = logger
	cfg.Progress = func(stage string, elapsed time.Duration) {
		fmt.Fprintf(out, "  %-20s ready after %s\n", stage, elapsed.Round(10*time.Millisecond))
	}
	cfg.Say = func(line string) { fmt.Fprintln(out, line) }
	lowPorts, err := newLowPorts(o, cfg.Addr)
	if err != nil {
		ln.Close()
		return nil, err
	}
	// Stopped (lpCancel) and waited for when the lab stops.
	var lowPortsDone sync.WaitGroup
	defer lowPortsDone.Wait()
	lpCtx, lpCancel := context.WithCancel(ctx)
	defer lpCancel()
	var wroteLabFile atomic.Bool
	defer func() {
		if wroteLabFile.Load() {
			removeLabFile(o.dataDir)
		}
	}()
	cfg.OnReady = func(kubeconfig string) {
		// ccmlab curl and ccmlab lbs find the lab through it (curl.go).
		if err := writeLabFile(o.dataDir, cfg.Addr, o.token); err != nil {
			logger.Warn("cannot record the lab's address for ccmlab curl", "err", err)
		} else {
			wroteLabFile.Store(true)
		}
		if lowPorts != nil {
			fmt.Fprintln(out, lowPorts.Line())
			lowPortsDone.Add(1)
			go func() {
				defer lowPortsDone.Done()
				if err := lowPorts.Run(lpCtx); err != nil {
					logger.Error("the low-port mode stopped", "err", err)
				}
			}()
		}
		fmt.Fprintf(out, "ccmlab is ready: http://%s  kubeconfig: %s\n", ln.Addr(), kubeconfig)
		gcReady()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		next *restartRequest
	)
	if o.restart && o.kubeconfig == "" {
		cfg.Restart = func(profile string, addons []string) error {
			mu.Lock()
			defer mu.Unlock()
			if next != nil {
				return errors.New("a restart is already under way")
			}
			next = &restartRequest{profile: profile, addons: addons}
			cancel()
			return nil
		}
	}
	lab, err := app.New(ctx, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	defer lab.Close()

	// The HTTP server answers from the start (/healthz 503 until ready) and
	// stops after the lab, so pages hear the lab's goodbye.
	// httpguard's bounds: a cloud call held in step mode or an exercise
	// reset may take minutes before it answers, which a per-write
	// WriteTimeout allows; /ws bounds itself (the hub's pings).
	httpServer, err := httpguard.NewServer(httpguard.ServerConfig{
		Handler:     lab.Handler(),
		BaseContext: func(net.Listener) context.Context { return ctx },
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	var serveErr error
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := httpServer.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
			cancel()
		}
	}()
	fmt.Fprintf(out, "ccmlab %s starting in %s\n", version, lab.DataDir())
	err = lab.Run(runCtx)
	shutdownCtx, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelShutdown()
	_ = httpServer.Shutdown(shutdownCtx)
	<-served
	if serveErr != nil {
		return nil, fmt.Errorf("web server: %w", serveErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if next != nil && ctx.Err() == nil {
		// The lab ended because the page asked for a restart: not an error.
		return next, nil
	}
	return nil, err
}

// freshDataDir makes dir empty but for the exercise progress: the old
// state (etcd, the cloud, the PKI) moves to dir.previous, replacing an
// older one, so nothing a student did is deleted at once.
func freshDataDir(dir string) error {
	prev := filepath.Clean(dir) + ".previous"
	if err := os.RemoveAll(prev); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := os.Rename(dir, prev); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	// SQLite in WAL mode: the database and, if a checkpoint is pending,
	// its -wal and -shm files.
	for _, name := range []string{"progress.db", "progress.db-wal", "progress.db-shm"} {
		b, err := os.ReadFile(filepath.Join(prev, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("restart: keeping the progress: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return fmt.Errorf("restart: keeping the progress: %w", err)
		}
	}
	return nil
}

// studentAddr is the host:port the exercises' commands use to reach the
// lab: localhost for a loopback or any-address listener (what a student on
// the machine types), the address itself otherwise.
func studentAddr(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	if ap.Addr().IsLoopback() || ap.Addr().IsUnspecified() {
		return fmt.Sprintf("localhost:%d", ap.Port())
	}
	return ap.String()
}
