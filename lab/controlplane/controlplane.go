package controlplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager +
// kube-scheduler.
type ControlPlane struct {
	cfg Config
	pki pki

	etcd   *embed.Etcd
	server string // https://127.0.0.1:<port>

	// Each component has its own context so Stop can shut them down in
	// dependency order: clients first, then the apiserver, then etcd.
	components []*component

	restConfig *rest.Config
	infra      *Infra       // see infra.go; nil unless Config.Infra
	egress     *egressProxy // see egress.go
	space      *spaceGuard  // see etcdspace.go
	stopSpace  func()
	stopOnce   sync.Once
	stopErr    error
}

type component struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (c *component) wait(timeout time.Duration) error {
	select {
	case <-c.done:
		if c.err != nil && !errors.Is(c.err, context.Canceled) {
			return fmt.Errorf("%s: %w", c.name, c.err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %s", c.name, timeout)
	}
}

// KubeconfigPath is the admin kubeconfig written on every start.
func (cp *ControlPlane) KubeconfigPath() string { return filepath.Join(cp.cfg.DataDir, "kubeconfig") }

// componentKubeconfig is what the lab's own components use (through
// RestConfig). It is an admin identity (system:masters), which the
// controller-manager's and the scheduler's kubeconfigs (clientKubeconfig)
// present as well, under a path of their own (useragent.go); the
// controller-manager's controllers act as their ServiceAccounts, as in
// kubeadm.
func (cp *ControlPlane) componentKubeconfig() string { return cp.pki.path("components.kubeconfig") }

// ClusterCIDR is the Pod network the controller-manager cuts podCIDRs from;
// the Route controller must be told the same.
func (cp *ControlPlane) ClusterCIDR() string { return cp.cfg.ClusterCIDR }

// Server is the apiserver URL.
func (cp *ControlPlane) Server() string { return cp.server }

// RestConfig returns a copy of the admin client configuration.
func (cp *ControlPlane) RestConfig() *rest.Config { return rest.CopyConfig(cp.restConfig) }

// Client returns an admin clientset.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cp.RestConfig())
}

// Start brings the control plane up and returns once the apiserver answers
// /readyz and the controller-manager and scheduler are running. On error
// everything started so far is stopped again.
func Start(ctx context.Context, cfg Config) (_ *ControlPlane, err error) {
	cfg.Defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	QuietKlog(cfg.Verbosity)

	cp := &ControlPlane{cfg: cfg, pki: pki{dir: filepath.Join(cfg.DataDir, "pki")}}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	begin := time.Now()
	if err := cp.pki.ensure(); err != nil {
		return nil, fmt.Errorf("preparing certificates in %s: %w", cp.pki.dir, err)
	}
	if err := cp.startEgressProxy(); err != nil {
		return nil, err
	}

	// etcd ends the process when a write of its own fails (etcdspace.go);
	// on a disk that is already full it would at its first.
	if free, err := cp.diskFree(); err == nil && free < cfg.EtcdDiskReserve {
		return nil, fmt.Errorf("the data dir's disk (%s) has %s free; etcd needs %s to start: free some disk space", cfg.DataDir, mib(free), mib(cfg.EtcdDiskReserve))
	}
	cp.etcd, cp.server, err = startEtcd(cfg)
	if err != nil {
		return nil, err
	}
	cp.startSpaceGuard()
	cfg.Progress("etcd", time.Since(begin))

	// The apiserver gets a listener bound here, so its port is free by
	// construction.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("binding the apiserver port: %w", err)
	}
	etcdURL := cp.server
	cp.server = fmt.Sprintf("https://%s", ln.Addr().String())
	if err := cp.writeKubeconfig(); err != nil {
		ln.Close()
		return nil, err
	}
	if cp.restConfig, err = cp.loadRestConfig(); err != nil {
		ln.Close()
		return nil, err
	}
	if err := cp.launch(ctx, "kube-apiserver", func(c context.Context) (func() error, error) {
		return cp.runAPIServer(c, ln, etcdURL)
	}); err != nil {
		ln.Close()
		return nil, err
	}
	if err := cp.waitAPIServerReady(ctx); err != nil {
		return nil, err
	}
	cfg.Progress("apiserver", time.Since(begin))
	if cfg.Infra {
		if err := cp.startInfra(ctx, etcdURL); err != nil {
			return nil, err
		}
		cfg.Progress("management apiserver", time.Since(begin))
	}
	if cfg.APIServerOnly {
		return cp, nil
	}

	if err := cp.launch(ctx, "kube-controller-manager", cp.runControllerManager); err != nil {
		return nil, err
	}
	cfg.Progress("controller-manager", time.Since(begin))
	if err := cp.launch(ctx, "kube-scheduler", cp.runScheduler); err != nil {
		return nil, err
	}
	cfg.Progress("scheduler", time.Since(begin))
	return cp, nil
}

func (cp *ControlPlane) startSpaceGuard() {
	cp.space = newSpaceGuard(cp.etcd.Server, cp.cfg, cp.etcd.Config().Dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cp.space.run(ctx, cp.cfg.Clock, cp.cfg.EtcdSpaceCheck)
	}()
	cp.stopSpace = func() { cancel(); <-done }
}

// launch builds a component with its own context (derived from the
// caller's values but not its cancellation, so Stop decides the order) and
// runs it in the background.
func (cp *ControlPlane) launch(ctx context.Context, name string, build func(context.Context) (func() error, error)) error {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run, err := build(cctx)
	if err != nil {
		cancel()
		return err
	}
	c := &component{name: name, cancel: cancel, done: make(chan struct{})}
	cp.components = append(cp.components, c)
	go func() {
		defer close(c.done)
		c.err = run()
	}()
	return nil
}

func (cp *ControlPlane) waitAPIServerReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.restConfig)
	if err != nil {
		return err
	}
	apiserver := cp.components[0]
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-apiserver.done:
			return false, fmt.Errorf("kube-apiserver exited: %w", apiserver.err)
		default:
		}
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw()
		if err != nil {
			last = fmt.Errorf("%w: %s", err, body)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (last answer: %v)", err, last)
	}
	return err
}

// Stop shuts the components down in reverse order and closes etcd last, so
// that the next Start finds its data intact. It is safe to call twice.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		for i := len(cp.components) - 1; i >= 0; i-- {
			c := cp.components[i]
			c.cancel()
			if err := c.wait(30 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if cp.egress != nil {
			cp.egress.close()
		}
		if cp.stopSpace != nil {
			cp.stopSpace()
		}
		if cp.etcd != nil {
			cp.etcd.Close()
		}
		cp.stopErr = errors.Join(errs...)
	})
	return cp.stopErr
}

// QuietKlog routes the Kubernetes components' klog output nowhere unless a
// verbosity was asked for. klog is process-global, which is why this is the
// only place that touches it; Start calls it, and a lab attached to an
// existing cluster (whose CCM still logs through klog) calls it instead.
func QuietKlog(v int) {
	if captured.Load() {
		return // CaptureKlog (logs.go) owns klog
	}
	// Each component re-applies logging options; without this a second
	// application with equal values would fail.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if v == 0 {
		klog.SetLogger(logr.Discard())
		return
	}
	klog.ClearLogger()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(v))
}
