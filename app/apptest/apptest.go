// Package apptest builds the lab's simulated side for integration tests,
// the way package app builds it for the binary: sim.Served's defaults and
// sim.Start's start sequence (the AWS API, the upstream provider's
// tripwire, the kubelets' dialer) against the test control plane of
// lab/controlplane/cptest, run under one errgroup.
package apptest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"golang.org/x/sync/errgroup"

	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/podlog"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/controlplane"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// Serve builds the lab `ccmlab serve` builds for l (sim.DefaultLab() is
// the lab without flags) against env's control plane: the same defaults
// (sim.Served), a control-plane node with the control plane's mirror Pods
// and the CCM's Pod, and env's cluster CIDR. Exercises are tested on it,
// so they are tested on what students get.
//
// With the upstream AWS provider (l.AWSProvider, or the profile's default
// when it is empty) it is ServeUpstream.
func Serve(env *cptest.Env, l sim.Lab) (*Lab, error) {
	if cmp.Or(l.AWSProvider, sim.DefaultAWSProvider(l.Profile)) == sim.AWSProviderUpstream {
		lab, _, err := ServeUpstream(env, l)
		return lab, err
	}
	cfg, err := served(env, l)
	if err != nil {
		return nil, err
	}
	return start(env, cfg, sim.AWSProviderLab)
}

// served is sim.Served for l on env's control plane.
func served(env *cptest.Env, l sim.Lab) (sim.Config, error) {
	caCert, caKey, err := env.CP.CA()
	if err != nil {
		return sim.Config{}, err
	}
	cfg := sim.Served(l, sim.Embedded{StaticPods: env.CP.StaticPods(), CACertPEM: caCert, CAKeyPEM: caKey})
	cfg.ClusterCIDR = env.CP.ClusterCIDR()
	if in := env.CP.Infra(); in != nil && l.Profile.Name == "kubevirt" {
		// The kubevirt profile's management side, as app gives it
		// (cptest.Main with controlplane.Config.Infra).
		cfg.Infra = in.RestConfig()
	}
	return cfg, nil
}

// Start builds a simulation against env's control plane from cfg (Profile
// defaults to aws, RestConfig to env's), runs it until env.Ctx ends, and
// returns once its caches are synced. A part that fails later ends the
// whole simulation, as in the binary; Failed reports it.
func Start(env *cptest.Env, cfg sim.Config) (*Lab, error) {
	return start(env, cfg, sim.AWSProviderLab)
}

// start runs sim.Start, the binary's start sequence (package app), on
// env's control plane with the CCM on provider, then waits for what the
// binary waits for before it says it is ready.
func start(env *cptest.Env, cfg sim.Config, provider string) (*Lab, error) {
	if cfg.Profile.Name == "" {
		cfg.Profile, _ = profile.Get("aws")
	}
	cfg.RestConfig = cmp.Or(cfg.RestConfig, env.Config)
	// The kubelets serve their API, and the test apiserver reaches it, as in
	// the binary: `GetLogs` of a Pod reads its access log. The control plane
	// is the package's, so the last lab started is the one it reaches.
	if cfg.CACertPEM == nil {
		var err error
		if cfg.CACertPEM, cfg.CAKeyPEM, err = env.CP.CA(); err != nil {
			return nil, err
		}
	}
	// What the binary keeps in its data dir (aws.env, the upstream
	// provider's cloud config) goes in one of this lab's own: several labs
	// may share env.
	if cfg.ControlPlaneNode {
		// A served lab: klog goes into the static Pods' logs, so `kubectl
		// logs` of the CCM's Pod reads the provider's own lines, as in
		// ccmlab serve (app.startCluster). klog is the process's: the last
		// served lab of a package has it.
		if cfg.Logs == nil {
			cfg.Logs = podlog.New(sim.AppLogBytes, 0)
		}
		controlplane.CaptureKlog(cfg.Logs, 0)
	}
	dir, err := os.MkdirTemp(env.DataDir, "lab-")
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(env.Ctx)
	st, err := sim.Start(env.Ctx, gctx, g, cfg, sim.StartConfig{
		AWSProvider: provider, AWSEnvPath: filepath.Join(dir, "aws.env"), UpstreamDir: dir, ControlPlane: env.CP,
	})
	if st == nil {
		return nil, fmt.Errorf("apptest: %w", err)
	}
	l := &Lab{Sim: st.Sim, Config: cfg, AWSAPI: st.AWSAPI, done: make(chan struct{})}
	if st.Tripwire != nil {
		l.Upstream = &Upstream{API: st.AWSAPI, Tripwire: st.Tripwire}
	}
	go func() {
		l.err = g.Wait()
		close(l.done)
	}()
	if err != nil {
		return nil, fmt.Errorf("apptest: waiting for caches: %w", err)
	}
	if cfg.ControlPlaneNode {
		// The CCM runs as its DaemonSet's Pod: tests start once a CCM
		// process leads, as a student finds the lab once the page shows
		// its switches on.
		if err := wait.PollUntilContextTimeout(gctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			return st.Manager.Identity() != "", nil
		}); err != nil {
			return nil, fmt.Errorf("apptest: waiting for the CCM's Pod to lead: %w", err)
		}
		// And once the nodes are initialized, as the binary says it is
		// ready only then (app.waitNodesInitialized).
		if done, running, ok := st.WaitNodesInitialized(gctx, slices.Contains(cfg.Controllers, profile.Node), 90*time.Second); !ok {
			return nil, fmt.Errorf("apptest: only %d of %d nodes initialized", done, running)
		}
	}
	return l, nil
}

// Lab is a running simulation.
type Lab struct {
	*sim.Sim
	// Config is what the simulation was built from (RestConfig filled in).
	Config sim.Config
	// AWSAPI serves the lab's cloud in AWS's wire protocol, as in the
	// binary (the lbc add-on talks to it).
	AWSAPI *awsapi.Server
	// Upstream is the AWS side of a lab on the upstream AWS provider
	// (ServeUpstream), nil on the lab's own provider.
	Upstream *Upstream
	done     chan struct{}
	err      error
}

// Failed returns the error of the part that ended the simulation, or nil
// while it runs (or after it stopped because its context ended).
func (l *Lab) Failed() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}
