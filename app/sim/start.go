package sim

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/controllers/upstreamaws"
	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// StartConfig is what Start needs besides the simulation's Config: the
// AWS side and the control plane the simulation runs on.
type StartConfig struct {
	// AWSProvider is AWSProviderUpstream to give the CCM the upstream AWS
	// provider over the lab's AWS API, with the tripwire armed; otherwise
	// the CCM has Config.Upstream (nil: the lab's own provider).
	AWSProvider string
	// AWSListen is where the AWS API listens ("": a free loopback port);
	// AWSEnvPath, when set, is where it writes the aws CLI's environment.
	AWSListen, AWSEnvPath string
	// UpstreamDir is where the upstream provider writes its cloud config
	// files (the data dir); required with AWSProviderUpstream.
	UpstreamDir string
	// ControlPlane, the embedded one, reaches the kubelets through their
	// dialer once they exist (kubectl logs, exec); nil for an attached
	// cluster, whose apiserver cannot reach them.
	ControlPlane *controlplane.ControlPlane
	// Parts, when set, adds the caller's own parts to g once the
	// simulation's run, before the caches are awaited, so they miss none
	// of the first changes (the binary's cloud stream).
	Parts  func(*Sim)
	Logger *slog.Logger
}

// Started is a simulation that runs, with its AWS API.
type Started struct {
	*Sim
	// AWSAPI serves the cloud in AWS's wire protocol on loopback.
	AWSAPI *awsapi.Server
	// Tripwire is where the upstream provider's requests land if they miss
	// the AWS API (nil on the lab's own provider): any hit is a bug.
	Tripwire *upstreamaws.Tripwire
}

// Start is the start sequence `ccmlab serve` runs (package app) and the
// integration tests' labs run too (app/apptest), so tests exercise the
// binary's wiring: it builds the simulation from cfg, starts the AWS API
// on its cloud before any controller runs (the lbc add-on and the upstream
// provider talk to it), adds every part to g (whose context is gctx), and
// waits, within ctx and at most a minute, for the caches.
//
// An error before the parts run leaves nothing behind; once they run (the
// caches did not sync) the Started comes back with the error, to be closed
// after g.Wait.
func Start(ctx, gctx context.Context, g *errgroup.Group, cfg Config, sc StartConfig) (_ *Started, err error) {
	if sc.Logger == nil {
		sc.Logger = slog.New(slog.DiscardHandler)
	}
	st := &Started{}
	// Every caller of the AWS API signs with its own key from this store:
	// the student's (kept in the data dir), the CCM's controllers', lbc's.
	keys := awsapi.NewKeys()
	if cfg.AWSKeys == nil {
		cfg.AWSKeys = keys
	}
	// The controllers read up when they start, after the AWS API is up.
	var up upstreamaws.Config
	if sc.AWSProvider == AWSProviderUpstream {
		if sc.UpstreamDir == "" {
			return nil, errors.New("sim: the upstream AWS provider needs StartConfig.UpstreamDir")
		}
		if st.Tripwire, err = armTripwire(); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil && st.Sim == nil {
				st.Tripwire.Close()
			}
		}()
		cfg.Upstream = func(caller string, client kubernetes.Interface, f informers.SharedInformerFactory, stop <-chan struct{}) (cloudprovider.Interface, error) {
			if up.Endpoint == "" {
				return nil, errors.New("the lab's AWS API is not serving yet")
			}
			return upstreamaws.New(up, caller, client, f, stop)
		}
	}
	var awsURL string
	if cfg.AWSAPI == nil {
		cfg.AWSAPI = func() string { return awsURL }
	}
	s, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var infraKubelet *infraKubelet
	if sc.ControlPlane != nil {
		dial := s.DialCluster
		if s.isKubevirt() {
			// The management nodes' kubelet API (kubevirtpod.go): `kubectl
			// --infra logs` of the CCM's Pod.
			if infraKubelet, err = newInfraKubelet(s); err != nil {
				_ = s.Close()
				return nil, err
			}
			if infraKubelet != nil {
				dial = infraKubelet.dialer(dial)
			}
		}
		sc.ControlPlane.SetClusterDialer(dial)
	}
	st.AWSAPI, err = awsapi.Listen(awsapi.ServerConfig{
		Handler: awsapi.Config{Cloud: s.Cloud, Keys: cfg.AWSKeys, Logger: sc.Logger.With("component", "awsapi")},
		Listen:  sc.AWSListen,
		EnvPath: sc.AWSEnvPath,
		Files:   cfg.CloudFiles,
	})
	if err != nil {
		if infraKubelet != nil {
			infraKubelet.ln.Close()
		}
		_ = s.Close()
		return nil, err
	}
	awsURL = st.AWSAPI.URL()
	if st.Tripwire != nil {
		n := s.Cloud.AWSNetworkInfo()
		cc := s.Cloud.Config()
		up = upstreamaws.Config{
			Endpoint: awsURL, Region: cc.Region, VPCID: n.VPCID, SubnetID: n.Subnets[0].ID,
			RouteTableID: n.RouteTableID, ClusterID: cc.ClusterID, Dir: sc.UpstreamDir, Methods: s.Cloud.Methods(),
			Keys: cfg.AWSKeys,
		}
		tw := st.Tripwire
		Go(gctx, g, "aws tripwire", func(ctx context.Context) error { <-ctx.Done(); return tw.Close() })
	}
	st.Sim = s
	Go(gctx, g, "aws api", st.AWSAPI.Serve)
	if infraKubelet != nil {
		Go(gctx, g, "kubevirt infra kubelet", infraKubelet.run)
	}
	s.Go(gctx, g)
	if sc.Parts != nil {
		sc.Parts(s)
	}

	// A part that fails ends the wait too.
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	defer context.AfterFunc(gctx, cancelSync)()
	if err := s.WaitForSync(syncCtx); err != nil {
		return st, err
	}
	return st, nil
}

// armTripwire starts the tripwire and points the AWS SDK's environment at
// it (upstreamaws.SetProcessEnv): the SDK reads those settings only from
// the process's environment, so a process runs one upstream lab.
func armTripwire() (*upstreamaws.Tripwire, error) {
	tw, err := upstreamaws.StartTripwire()
	if err != nil {
		return nil, err
	}
	if err := upstreamaws.SetProcessEnv(tw.URL()); err != nil {
		tw.Close()
		return nil, err
	}
	return tw, nil
}
