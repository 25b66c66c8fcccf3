package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server"
	"github.com/ccmlab/ccmlab/web"
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
	cloudLatency time.Duration
	kubeconfig   string
	clusterCIDR  string
	// bareAPIServer is the cold-start benchmark's baseline: etcd and
	// kube-apiserver only.
	bareAPIServer bool
}

func defaultServeOptions() *serveOptions {
	return &serveOptions{listen: "127.0.0.1:8080", dataDir: ".ccmlab", nodes: 3, profile: "aws", token: os.Getenv("CCMLAB_TOKEN")}
}

func (o *serveOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listen, "listen", o.listen, "address of the web view and API")
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "where the lab keeps its state (etcd, cloud, kubeconfig)")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "number of instances (nodes) the lab launches on first start")
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "log verbosity of the Kubernetes components (0 = quiet)")
	fs.StringVar(&o.profile, "profile", o.profile, "cloud profile: "+strings.Join(profile.Names(), ", "))
	fs.StringVar(&o.controllers, "controllers", o.controllers, "CCM controllers enabled at start: a comma list of node,nodelifecycle,route,service, or none (default: all the profile has)")
	fs.StringVar(&o.addons, "addons", o.addons, "add-ons: lbc (a load-balancer-controller for loadBalancerClass service.k8s.aws/nlb, ip targets)")
	fs.StringVar(&o.token, "token", o.token, "bearer token required on every request (required when --listen is not loopback; env CCMLAB_TOKEN)")
	fs.DurationVar(&o.cloudLatency, "cloud-latency", o.cloudLatency, "delay added to every cloud API call, for slow-motion demos")
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "attach to the existing cluster in this kubeconfig instead of embedding one (a throwaway one, e.g. kind: it should allocate node CIDRs and run no other CCM)")
	fs.StringVar(&o.clusterCIDR, "cluster-cidr", o.clusterCIDR, "with --kubeconfig: the cluster's Pod network (default "+defaultAttachedClusterCIDR+", kind's)")
	fs.BoolVar(&o.bareAPIServer, "bare-apiserver", false, "start only etcd and kube-apiserver (benchmark baseline)")
	_ = fs.MarkHidden("bare-apiserver")
}

func (o *serveOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	if o.nodes < 0 || o.nodes > 1000 {
		return fmt.Errorf("--nodes %d: must be between 0 and 1000", o.nodes)
	}
	if o.verbosity < 0 {
		return fmt.Errorf("-v %d: must not be negative", o.verbosity)
	}
	p, err := profile.Get(o.profile)
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if _, err := p.ParseControllers(o.controllers); err != nil {
		return err
	}
	if _, err := parseAddons(o.addons); err != nil {
		return err
	}
	if o.cloudLatency < 0 || o.cloudLatency > time.Minute {
		return fmt.Errorf("--cloud-latency %s: must be between 0 and 1m", o.cloudLatency)
	}
	if o.kubeconfig == "" && o.clusterCIDR != "" {
		return fmt.Errorf("--cluster-cidr only applies with --kubeconfig (the embedded control plane chooses its own)")
	}
	if o.kubeconfig != "" {
		if o.bareAPIServer {
			return fmt.Errorf("--bare-apiserver and --kubeconfig exclude each other")
		}
		if o.clusterCIDR == "" {
			o.clusterCIDR = defaultAttachedClusterCIDR
		}
		if err := validateClusterCIDR(o.clusterCIDR); err != nil {
			return err
		}
	}
	host, _, _ := net.SplitHostPort(o.listen)
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && o.token == "" {
		return fmt.Errorf("--listen %s is reachable from other machines: set --token (or CCMLAB_TOKEN) so only your class can switch the lab", o.listen)
	}
	return nil
}

func parseAddons(v string) ([]string, error) {
	switch v {
	case "":
		return nil, nil
	case "lbc":
		return []string{"lbc"}, nil
	}
	return nil, fmt.Errorf("--addons %q: unknown add-on (valid: lbc)", v)
}

func serve(ctx context.Context, o *serveOptions, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	begin := time.Now()
	// Bind before touching anything, so a busy port fails fast and leaves
	// the data dir as it was.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, errors.Unwrap(err))
	}
	// An attached cluster is checked before the data dir is touched, too.
	var attached *attachedCluster
	if o.kubeconfig != "" {
		if attached, err = attach(ctx, o.kubeconfig, o.clusterCIDR); err != nil {
			ln.Close()
			return err
		}
	}
	dataDir, unlock, err := prepareDataDir(o.dataDir)
	if err != nil {
		ln.Close()
		return err
	}
	defer unlock()
	// The lab's own log stays at warnings unless -v asks for more, so the
	// progress lines and the ready line are what a student sees.
	level := slog.LevelWarn
	if o.verbosity > 0 {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	assets, err := web.Handler(web.Config{})
	if err != nil {
		ln.Close()
		return err
	}
	srv, err := server.New(server.Config{Logger: logger, Token: o.token, Assets: assets})
	if err != nil {
		ln.Close()
		return err
	}
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(shutdownCtx)
	}()

	progress := func(stage string, elapsed time.Duration) {
		fmt.Fprintf(out, "  %-20s ready after %s\n", stage, elapsed.Round(10*time.Millisecond))
	}
	fmt.Fprintf(out, "ccmlab %s starting in %s\n", version, dataDir)
	var cl cluster
	if attached != nil {
		controlplane.QuietKlog(o.verbosity)
		if err := attached.writeKubeconfig(dataDir); err != nil {
			return err
		}
		fmt.Fprintf(out, "  attached to %s (cluster CIDR %s)\n", attached.restConfig.Host, attached.clusterCIDR)
		cl = attached
	} else {
		cp, err := controlplane.Start(ctx, controlplane.Config{
			DataDir:       dataDir,
			Verbosity:     o.verbosity,
			Progress:      progress,
			APIServerOnly: o.bareAPIServer,
		})
		if err != nil {
			return err
		}
		cl = cp
	}
	defer func() {
		fmt.Fprintln(out, "ccmlab stopping")
		if err := cl.Stop(); err != nil {
			logger.Error("stopping the control plane", "err", err)
		}
	}()
	p, _ := profile.Get(o.profile)
	enabled, _ := p.ParseControllers(o.controllers)
	addons, _ := parseAddons(o.addons)
	lab, err := startLab(ctx, labConfig{
		dataDir: dataDir, profile: p, controllers: enabled, addons: addons,
		nodes: o.nodes, cloudLatency: o.cloudLatency, logger: logger,
	}, cl, srv, progress)
	if err != nil {
		return err
	}
	defer func() {
		// The hub says goodbye first, so pages show "reconnecting" rather
		// than an error; then the simulated world stops, then (deferred
		// above) the control plane.
		byeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		_ = lab.hub.Close(byeCtx)
		cancel()
		lab.stop()
	}()
	srv.SetLab(lab.api)
	waitNodesInitialized(ctx, lab, enabled, progress, begin)
	srv.SetReady(true)
	progress("lab", time.Since(begin))
	fmt.Fprintf(out, "ccmlab is ready: http://%s  kubeconfig: %s\n", ln.Addr(), cl.KubeconfigPath())

	select {
	case <-ctx.Done():
		srv.SetReady(false)
		return nil
	case err := <-serveErr:
		return fmt.Errorf("web server: %w", err)
	case err := <-lab.errs:
		return err
	}
}

// waitNodesInitialized holds the ready line until every node has joined and,
// when the Node controller runs, lost its uninitialized taint: "ready" means
// a student can schedule Pods. Without a Node controller nodes stay tainted
// by design, so only joining is awaited.
func waitNodesInitialized(ctx context.Context, l *lab, enabled []string, progress func(string, time.Duration), begin time.Time) {
	nodeCtrl := slices.Contains(enabled, profile.Node)
	deadline := time.After(90 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		running := 0
		for _, inst := range l.cloud.Snapshot().Instances {
			if inst.State == cloud.InstanceRunning {
				running++
			}
		}
		done := 0
		for _, n := range l.observer.Snapshot().Nodes {
			if n.Ready == "True" && (!nodeCtrl || (n.ProviderID != "" && !n.Tainted())) {
				done++
			}
		}
		if done >= running {
			stage := "nodes joined"
			if nodeCtrl {
				stage = "nodes initialized"
			}
			progress(fmt.Sprintf("%s (%d)", stage, done), time.Since(begin))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			progress(fmt.Sprintf("nodes: only %d of %d ready, going on", done, running), time.Since(begin))
			return
		case <-tick.C:
		}
	}
}

// prepareDataDir makes sure the data dir exists and is writable, and locks
// it so that a second ccmlab on the same dir fails with a clear message
// instead of two etcds fighting over one database.
func prepareDataDir(dir string) (string, func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", nil, fmt.Errorf("--data-dir %s is not usable: %w", abs, errors.Unwrap(err))
	}
	lock, err := os.OpenFile(filepath.Join(abs, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("--data-dir %s is not writable: %w", abs, errors.Unwrap(err))
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("--data-dir %s is in use by another ccmlab", abs)
	}
	return abs, func() {
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		lock.Close()
	}, nil
}
