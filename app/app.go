package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server"
	"github.com/ccmlab/ccmlab/server/hub"
	"github.com/ccmlab/ccmlab/server/stream"
	"github.com/ccmlab/ccmlab/web"
)

// Config is everything the lab is built from. DataDir and Profile are
// required; the rest has defaults. Validate holds every rule a Config
// must follow (validate.go); cmd/ccmlab's flags are checked by it too.
type Config struct {
	// DataDir holds etcd, the PKI, the kubeconfig, the cloud's state and
	// the exercise progress; it is created if missing and locked while the
	// lab runs.
	DataDir string
	Profile profile.Profile
	// Controllers on at start, as profile.ParseControllers returns them.
	Controllers []string
	Addons      []string
	// Nodes is how many instances the cloud launches on first start.
	Nodes        int
	CloudLatency time.Duration
	// Verbosity of the Kubernetes components' logs (0: quiet).
	Verbosity int
	// Token, when set, is required on every HTTP request.
	Token string
	// Listen is the HTTP listen address and AllowedHosts the further
	// names the lab answers to (--allow-host); any other Host is refused.
	Listen       string
	AllowedHosts []string
	// Addr is the host:port a student reaches the lab at (the bound
	// listener, as cmd/ccmlab knows it); the exercises' commands name it.
	// Default: localhost:8080, what the exercises are written with.
	Addr string
	// AWSListen is the loopback address of the simulated cloud's AWS API
	// (lab/awsapi); default "127.0.0.1:0", a free port, written to
	// <data-dir>/aws.env.
	AWSListen string
	// AWSProvider is the CCM's cloud provider on the aws and vpc-cni
	// profiles: AWSProviderLab or AWSProviderUpstream; ""
	// is sim.DefaultAWSProvider(Profile).
	AWSProvider string

	// Kubeconfig, when set, attaches to that existing cluster instead of
	// embedding a control plane; ClusterCIDR is its Pod network (default
	// DefaultAttachedClusterCIDR).
	Kubeconfig  string
	ClusterCIDR string
	// BareAPIServer starts etcd and kube-apiserver only: the cold-start
	// benchmark's baseline.
	BareAPIServer bool
	// BareControlPlane starts etcd, kube-apiserver, kube-controller-manager
	// and kube-scheduler as the lab runs them, and no lab: the idle
	// footprint benchmark's baseline. It is ready once they are.
	BareControlPlane bool

	Logger *slog.Logger
	// Progress hears each stage as it becomes ready (optional).
	Progress func(stage string, elapsed time.Duration)
	// Say hears the few lines a student should read besides the stages:
	// which cluster was attached, and that the lab stops (optional).
	Say func(line string)
	// OnReady is called once the lab is ready, with the kubeconfig path
	// (optional).
	OnReady func(kubeconfig string)
	// Restart, when set, lets the page restart the lab into another
	// profile or with other add-ons (POST /api/lab/restart), for an
	// exercise this lab cannot run. It is called with a request Validate
	// accepted; it must return at once and have Run end, for its caller to
	// start the lab again (cmd/ccmlab's serve keeps the progress). Nil:
	// no restart is offered (a classroom's lab, a test's).
	Restart func(profile string, addons []string) error
	// Files writes the cloud's state file and the server's space probe
	// into the data dir (default datafs.OS{}); tests inject a
	// datafs.Switch to make that disk full.
	Files datafs.Writer

	// MemoryLimit is the Go soft memory limit, in bytes, of the process
	// that runs the lab (runtime/debug.SetMemoryLimit; 0: none), and
	// MaxOpenFiles its RLIMIT_NOFILE (0: as inherited). Both belong to the
	// process, so the process applies them: cmd/ccmlab's serve does
	// (DefaultMemoryLimit unless --memory-limit or GOMEMLIMIT say
	// otherwise); a test running labs in its own process leaves them 0.
	MemoryLimit  int64
	MaxOpenFiles int
}

// Lab is what the simulation is built from: the profile, switches, add-ons,
// node count and latency.
func (c Config) Lab() sim.Lab {
	return sim.Lab{Profile: c.Profile, Controllers: c.Controllers, Addons: c.Addons, Nodes: c.Nodes, CloudLatency: c.CloudLatency, AWSProvider: c.AWSProvider}
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = func(string, time.Duration) {}
	}
	if c.Say == nil {
		c.Say = func(string) {}
	}
	if c.OnReady == nil {
		c.OnReady = func(string) {}
	}
	if c.Files == nil {
		c.Files = datafs.OS{}
	}
	if c.Kubeconfig != "" && c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultAttachedClusterCIDR
	}
	if c.AWSProvider == "" {
		c.AWSProvider = sim.DefaultAWSProvider(c.Profile)
	}
}

// App is a lab that has been checked and holds its data dir, but runs
// nothing until Run. Its Handler answers /healthz with 503 and the API
// with "the lab is starting" until the lab is ready.
type App struct {
	// tripwire counts AWS requests that missed the lab's endpoint
	// (--aws-provider upstream only).
	tripwire *upstreamaws.Tripwire
	cfg      Config
	logs     *podlog.Store // every Pod's log (kubectl logs)
	dataDir  string
	unlock   func()
	attached *attachedCluster
	srv      *server.Server
}

// New checks cfg, reaches the attached cluster if there is one, and then
// locks the data dir: a bad --kubeconfig leaves the data dir as it was.
// Close releases the lock.
func New(ctx context.Context, cfg Config) (*App, error) {
	cfg.setDefaults()
	if errs := cfg.validate(); len(errs) > 0 {
		return nil, fmt.Errorf("app: %w", errs.ToAggregate())
	}
	a := &App{cfg: cfg, logs: podlog.New(sim.AppLogBytes, 0)}
	if cfg.Kubeconfig != "" {
		var err error
		if a.attached, err = attach(ctx, cfg.Kubeconfig, cfg.ClusterCIDR); err != nil {
			return nil, err
		}
	}
	assets, err := web.Handler(web.Config{})
	if err != nil {
		return nil, err
	}
	if a.dataDir, a.unlock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	a.srv, err = server.New(server.Config{Logger: cfg.Logger, Token: cfg.Token, Assets: assets, DataDir: a.dataDir, Files: cfg.Files, Listen: cfg.Listen, AllowedHosts: cfg.AllowedHosts})
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// DataDir is the absolute data dir.
func (a *App) DataDir() string { return a.dataDir }

// Handler serves the page, the API and the stream.
func (a *App) Handler() http.Handler { return a.srv }

// Close releases the data dir; call it after Run has returned.
func (a *App) Close() {
	if a.unlock != nil {
		a.unlock()
		a.unlock = nil
	}
}

// lab is what Run builds, kept together for shutdown.
type lab struct {
	sim   *sim.Sim
	hub   *hub.Hub
	store *progress.Store
}

// Run starts the cluster and the lab, reports ready, and runs every part
// under one errgroup until ctx ends (nil) or a part fails (its error).
// Whatever it started it stops before returning: the hub says goodbye
// first, so pages show "reconnecting" rather than an error, then the lab's
// parts stop, the cloud saves its state, and the control plane stops.
func (a *App) Run(ctx context.Context) (err error) {
	begin := time.Now()
	cl, err := a.startCluster(ctx)
	if err != nil {
		return err
	}
	defer func() {
		a.cfg.Say("ccmlab stopping")
		if err := cl.Stop(); err != nil {
			a.cfg.Logger.Error("stopping the control plane", "err", err)
		}
	}()

	if a.cfg.BareControlPlane {
		a.srv.SetReady(true)
		a.cfg.Progress("control plane", time.Since(begin))
		a.cfg.OnReady(cl.KubeconfigPath())
		<-ctx.Done()
		return nil
	}

	// The parts live until shutdown is decided here, not until ctx ends,
	// so the hub's goodbye goes out while they still run.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	g, gctx := errgroup.WithContext(runCtx)
	l := &lab{}
	defer func() {
		a.srv.SetReady(false)
		if l.hub != nil {
			byeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			_ = l.hub.Close(byeCtx)
			cancel()
		}
		cancelRun()
		// A part that failed is the cause of whatever else went wrong.
		if werr := g.Wait(); werr != nil {
			err = werr
		}
		if l.store != nil {
			_ = l.store.Close()
		}
		if l.sim != nil {
			_ = l.sim.Close()
		}
	}()

	// Starting up ends early when the user interrupts or a part fails.
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	defer context.AfterFunc(gctx, cancelStart)()
	if err := a.build(startCtx, gctx, g, cl, l, begin); err != nil {
		return err
	}
	a.waitNodesInitialized(startCtx, l, begin)
	if startCtx.Err() == nil {
		// The recording starts here, so a flow run right after ready is in
		// the first download (hub.StartRecording).
		if err := l.hub.StartRecording(startCtx); err != nil {
			a.cfg.Logger.Warn("cannot start the recording; it starts with the next change", "err", err)
		}
		a.srv.SetReady(true)
		a.cfg.Progress("lab", time.Since(begin))
		a.cfg.OnReady(cl.KubeconfigPath())
	}
	select {
	case <-ctx.Done():
	case <-gctx.Done():
	}
	return nil // a part's failure comes from g.Wait in the deferred stop
}

// startCluster starts the embedded control plane or prepares the attached
// cluster.
func (a *App) startCluster(ctx context.Context) (cluster, error) {
	if a.attached != nil {
		// No static Pods here whose logs klog could fill: the attached
		// cluster has its own control plane and cannot reach the lab's
		// kubelets (docs/architecture.md).
		controlplane.QuietKlog(a.cfg.Verbosity)
		if err := a.attached.writeKubeconfig(a.dataDir); err != nil {
			return nil, err
		}
		a.cfg.Say(fmt.Sprintf("  attached to %s (cluster CIDR %s)", a.attached.restConfig.Host, a.attached.clusterCIDR))
		return a.attached, nil
	}
	// klog goes into the static Pods' logs (and to the terminal with -v).
	controlplane.CaptureKlog(a.logs, a.cfg.Verbosity)
	return controlplane.Start(ctx, controlplane.Config{
		DataDir:       a.dataDir,
		Verbosity:     a.cfg.Verbosity,
		Progress:      a.cfg.Progress,
		APIServerOnly: a.cfg.BareAPIServer,
		// The kubevirt profile's management side: its VMIs and its CCM
		// (app/sim kubevirt.go), <data-dir>/infra-kubeconfig.
		Infra:  a.cfg.Profile.Name == "kubevirt" && !a.cfg.BareAPIServer,
		Logger: a.cfg.Logger.With("component", "etcd"),
	})
}

// build assembles the lab in the order data flows — cloud, kubelets, CCM,
// data plane, observer, hub — starts its parts in g (whose context is
// gctx) and waits, within ctx, for their caches; then it adds the
// exercises and hands the whole to the server.
func (a *App) build(ctx, gctx context.Context, g *errgroup.Group, cl cluster, l *lab, begin time.Time) error {
	epoch := newEpoch()
	// api is set once the lab is assembled; the hub's recording may ask
	// for a snapshot before (it retries), websocket clients never do.
	var api atomic.Pointer[server.Lab]
	var err error
	l.hub, err = hub.New(hub.Config{
		Epoch:       epoch,
		Logger:      a.cfg.Logger.With("component", "hub"),
		RecordEvery: hub.DefaultRecordEvery,
		Snapshot: func(context.Context) (any, error) {
			lab := api.Load()
			if lab == nil {
				return nil, errors.New("the lab is starting")
			}
			return a.srv.State(lab), nil
		},
	})
	if err != nil {
		return err
	}
	pub := publisher{hub: l.hub, logger: a.cfg.Logger}
	// The embedded control plane gets a control-plane node with the static
	// Pods' mirrors, and its apiserver reaches the kubelets through the
	// egress proxy. An attached cluster has its own control plane, and its
	// apiserver cannot reach the lab's kubelets (docs/architecture.md).
	cp, embedded := cl.(*controlplane.ControlPlane)
	var caCert, caKey []byte
	var static []*v1.Pod
	if embedded && !a.cfg.BareAPIServer {
		if caCert, caKey, err = cp.CA(); err != nil {
			return err
		}
		static = cp.StaticPods()
	}
	// The defaults and the choices the flags make are sim.Served's, and the
	// start sequence sim.Start's, which the test world (app/apptest) is
	// built from too.
	scfg := sim.Served(a.cfg.Lab(), sim.Embedded{StaticPods: static, CACertPEM: caCert, CAKeyPEM: caKey})
	scfg.Logs, scfg.RestConfig, scfg.ClusterCIDR = a.logs, cl.RestConfig(), cl.ClusterCIDR()
	if embedded && cp.Infra() != nil {
		scfg.Infra = cp.Infra().RestConfig()
	}
	scfg.CloudStatePath = filepath.Join(a.dataDir, "cloud.json")
	scfg.CloudFiles = a.cfg.Files
	scfg.OnChange = pub.flowChange
	scfg.OnTrace = func(t dataplane.Trace) { pub.publish(stream.Trace(t)) }
	scfg.OnSwitch = func(status map[string]bool) { pub.publish(stream.Controllers(status)) }
	scfg.Logger = a.cfg.Logger
	awsEnv := filepath.Join(a.dataDir, "aws.env")
	sc := sim.StartConfig{
		AWSProvider: a.cfg.AWSProvider, AWSListen: a.cfg.AWSListen, AWSEnvPath: awsEnv,
		UpstreamDir: a.dataDir, Logger: a.cfg.Logger,
		Parts: func(s *sim.Sim) {
			sim.Go(gctx, g, "cloud stream", func(ctx context.Context) error { return streamCloud(ctx, s.Cloud, s.Dataplane, pub) })
		},
	}
	if static != nil {
		sc.ControlPlane = cp
	}
	st, err := sim.Start(ctx, gctx, g, scfg, sc)
	if st != nil {
		l.sim, a.tripwire = st.Sim, st.Tripwire
	}
	if err != nil {
		return err
	}
	s := st.Sim
	a.cfg.Say(fmt.Sprintf("  AWS API on %s (. %s, then: aws ec2 describe-instances)", st.AWSAPI.URL(), awsEnv))
	if err := writeLabEnv(a.cfg.Files, a.dataDir); err != nil {
		return err
	}
	a.cfg.Say(fmt.Sprintf("  terminal: . %s (KUBECONFIG and the AWS CLI for this lab, as the exercises' commands expect)", filepath.Join(a.dataDir, exercises.LabEnvFile)))

	if l.store, err = progress.Open(filepath.Join(a.dataDir, "progress.db")); err != nil {
		return err
	}
	env := check.Env{Client: s.Client, Cloud: s.Cloud, Flow: s.Observer, Controllers: s.Manager, Dataplane: s.Dataplane, Profile: a.cfg.Profile, History: s.History}
	if scfg.Infra != nil {
		// The kubevirt profile's management side, which its hands-on reads.
		if env.Infra, err = kubernetes.NewForConfig(scfg.Infra); err != nil {
			return err
		}
	}
	ex, err := exercises.New(exercises.Config{
		Env:   env,
		Store: l.store, Nodes: a.cfg.Nodes, Logger: a.cfg.Logger.With("component", "exercises"), Addr: a.cfg.Addr, DataDir: a.dataDir,
		Restartable:   a.cfg.Restart != nil,
		RestoreSystem: s.RestoreKubeSystem, // kube-system's add-ons (app/sim/kubesystem.go)
		// The lbc add-on's Service webhook, on only for its exercises
		// (app/sim/lbcpod.go).
		LBCServiceWebhook: s.SetLBCServiceWebhook,
		// A step passed by the automatic check turns green on the page.
		OnProgress: func(id string) { pub.publish(stream.Exercise{Exercise: id}) },
	})
	if err != nil {
		return err
	}
	sim.Go(gctx, g, "exercise checks", ex.Run)
	con, err := console.New(console.Config{DataDir: a.dataDir})
	if err != nil {
		return err
	}
	sl := &server.Lab{
		Profile: a.cfg.Profile, Cloud: s.Cloud, Controllers: s.Manager, Flow: s.Observer, Hub: l.hub,
		Requests: requester{dp: s.Dataplane, flow: s.Observer}, Epoch: epoch,
		Exercises: ex, Console: con, Restart: a.restartFunc(), Client: s.Client,
	}
	if scfg.Infra != nil {
		// The kubevirt profile's management cluster on the map.
		ms, err := newManagementStream(scfg.Infra, s.KubevirtCluster())
		if err != nil {
			return err
		}
		sim.Go(gctx, g, "management stream", func(ctx context.Context) error { return ms.run(ctx, pub) })
		sl.Management = ms.current
	}
	if embedded {
		// The lab's own etcd says when it takes no writes (its NOSPACE
		// alarm): /healthz and the API know it before a write meets it.
		sl.EtcdSpace = func() (bool, string) { sp := cp.EtcdSpace(); return sp.Full, sp.Reason }
	}
	api.Store(sl)
	a.srv.SetLab(sl)
	a.cfg.Progress("cloud, kubelets, ccm", time.Since(begin))
	return nil
}

// restartFunc is Config.Restart behind the lab's own rules: the profile
// and add-ons asked for must make a Config that Validate accepts, with
// the profile's default controllers and AWS provider (what the old
// profile's flags chose may not exist in the new one).
func (a *App) restartFunc() server.RestartFunc {
	if a.cfg.Restart == nil {
		return nil
	}
	return func(name string, addons []string) error {
		p, err := profile.Get(name)
		if err != nil {
			return err
		}
		next := a.cfg
		if p.Name != a.cfg.Profile.Name {
			// A new profile starts from its own defaults: the AWS
			// provider (cmd/ccmlab's serve does the same with its flags).
			next.AWSProvider = ""
		}
		next.Profile, next.Addons = p, addons
		if next.Controllers, err = p.ParseControllers(""); err != nil {
			return err
		}
		if err := next.Validate(); err != nil {
			return err
		}
		return a.cfg.Restart(name, addons)
	}
}

func newEpoch() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// publisher puts typed messages into the hub.
type publisher struct {
	hub    *hub.Hub
	logger *slog.Logger
}

func (p publisher) publish(m stream.Message) {
	if _, err := p.hub.Publish(m.Type(), m); err != nil && !errors.Is(err, hub.ErrClosed) {
		p.logger.Warn("publishing", "type", m.Type(), "err", err)
	}
}

func (p publisher) flowChange(c flow.Change) {
	m, err := stream.FromFlow(c)
	if err != nil {
		p.logger.Error("publishing", "err", err)
		return
	}
	p.publish(m)
}

// waitNodesInitialized holds the ready line until every node has joined and,
// when the Node controller runs, lost its uninitialized taint: "ready" means
// a student can schedule Pods. Without a Node controller nodes stay tainted
// by design, so only joining is awaited.
func (a *App) waitNodesInitialized(ctx context.Context, l *lab, begin time.Time) {
	nodeCtrl := slices.Contains(a.cfg.Controllers, profile.Node)
	done, running, ok := l.sim.WaitNodesInitialized(ctx, nodeCtrl, 90*time.Second)
	switch {
	case ok:
		stage := "nodes joined"
		if nodeCtrl {
			stage = "nodes initialized"
		}
		a.cfg.Progress(fmt.Sprintf("%s (%d)", stage, done), time.Since(begin))
	case ctx.Err() == nil:
		a.cfg.Progress(fmt.Sprintf("nodes: only %d of %d ready, going on", done, running), time.Since(begin))
	}
}

// lockDataDir makes sure the data dir exists and is writable, and locks
// it so that a second ccmlab on the same dir fails with a clear message
// instead of two etcds fighting over one database.
func lockDataDir(dir string) (string, func(), error) {
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
