package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/controllers"
	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/console"
	exprogress "github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/lab/world"
	"github.com/ccmlab/ccmlab/server"
	"github.com/ccmlab/ccmlab/server/hub"
)

// lab is the simulated world around the control plane, assembled in the
// order data flows: cloud -> kubelets -> CCM -> data plane -> flow -> hub.
type lab struct {
	api      *server.Lab
	cloud    *cloud.Cloud
	observer *flow.Observer
	hub      *hub.Hub
	store    *exprogress.Store

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

type labConfig struct {
	dataDir      string
	profile      profile.Profile
	controllers  []string
	addons       []string
	nodes        int
	cloudLatency time.Duration
	logger       *slog.Logger
}

func newEpoch() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startLab builds and runs everything but the control plane and the HTTP
// server. srv provides the snapshot for new websocket clients.
func startLab(ctx context.Context, cfg labConfig, cp cluster, srv *server.Server, progress func(string, time.Duration)) (_ *lab, err error) {
	begin := time.Now()
	ingress := cloud.IngressHostname
	if cfg.profile.IngressIP {
		ingress = cloud.IngressIP
	}
	c, err := cloud.New(cloud.Config{IngressMode: ingress, StatePath: filepath.Join(cfg.dataDir, "cloud.json")})
	if err != nil {
		return nil, err
	}
	if cfg.cloudLatency > 0 {
		if err := c.SetFaults(cloud.Faults{Latency: cloud.Duration{Duration: cfg.cloudLatency}}); err != nil {
			return nil, err
		}
	}
	// Instances are launched on first start only: on a restart the cloud's
	// saved state already has them.
	if len(c.Snapshot().Instances) == 0 {
		for i := 0; i < cfg.nodes; i++ {
			if _, err := c.RunInstance(cloud.WithCaller(ctx, "ccmlab"), cloud.RunInstanceInput{}); err != nil {
				return nil, fmt.Errorf("launching instance %d: %w", i+1, err)
			}
		}
	}

	l := &lab{cloud: c, errs: make(chan error, 8)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	defer func() {
		if err != nil {
			l.stop()
		}
	}()
	goRun := func(name string, run func(context.Context) error) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				l.errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}

	client, err := cp.Client()
	if err != nil {
		return nil, err
	}
	kubeletCfg := cp.RestConfig()
	kubeletCfg.QPS = -1 // see world.Config.KubeletClient
	kubeletClient, err := kubernetes.NewForConfig(kubeletCfg)
	if err != nil {
		return nil, err
	}

	epoch := newEpoch()
	l.hub, err = hub.New(hub.Config{
		Epoch:  epoch,
		Logger: cfg.logger.With("component", "hub"),
		Snapshot: func(context.Context) (any, error) {
			return srv.State(l.api), nil
		},
	})
	if err != nil {
		return nil, err
	}
	publish := func(typ string, data any) {
		if _, err := l.hub.Publish(typ, data); err != nil && !errors.Is(err, hub.ErrClosed) {
			cfg.logger.Warn("publishing", "type", typ, "err", err)
		}
	}
	w, err := world.New(world.Config{
		Cloud: c, Profile: cfg.profile, Client: client, KubeletClient: kubeletClient,
		RestConfig: cp.RestConfig(), ClusterCIDR: cp.ClusterCIDR(),
		Controllers: cfg.controllers, Addons: cfg.addons,
		// A node's addresses are refreshed once a minute rather than every
		// 5s, so the call log students read is not a wall of
		// DescribeInstances (upstream refreshes every 5m).
		Tuning:   controllers.Tuning{NodeStatusUpdateFrequency: time.Minute},
		OnChange: func(ch flow.Change) { publish(ch.Type, ch) },
		OnTrace:  func(t dataplane.Trace) { publish("trace", t) },
		OnSwitch: func(status map[string]bool) { publish("controllers", status) },
		Logger:   cfg.logger,
	})
	if err != nil {
		return nil, err
	}
	manager, dp := w.Manager, w.Dataplane
	l.observer = w.Observer
	goRun("lab", w.Run)
	goRun("cloud stream", func(ctx context.Context) error { return streamCloud(ctx, c, dp, publish) })

	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if err := w.WaitForSync(syncCtx); err != nil {
		return nil, err
	}
	l.store, err = exprogress.Open(filepath.Join(cfg.dataDir, "progress.db"))
	if err != nil {
		return nil, err
	}
	ex, err := exercises.New(exercises.Config{
		Env:   exercises.Env{Client: client, Cloud: c, Flow: l.observer, Controllers: manager, Dataplane: dp, Profile: cfg.profile},
		Store: l.store, Nodes: cfg.nodes, Logger: cfg.logger.With("component", "exercises"),
	})
	if err != nil {
		return nil, err
	}
	con, err := console.New(console.Config{DataDir: cfg.dataDir})
	if err != nil {
		return nil, err
	}
	l.api = &server.Lab{
		Profile: cfg.profile, Cloud: c, Controllers: manager, Flow: l.observer, Hub: l.hub,
		Requests: requester{dp: dp, flow: l.observer}, Epoch: epoch,
		Exercises: ex, Console: con,
	}
	progress("cloud, kubelets, ccm", time.Since(begin))
	return l, nil
}

// streamCloud forwards the cloud's changes to the page: every call (twice:
// when it starts and when it ends, same seq), each instance or load balancer
// as a whole object, the route table, faults and step mode.
func streamCloud(ctx context.Context, c *cloud.Cloud, dp *dataplane.Dataplane, publish func(string, any)) error {
	ch, stop := c.Subscribe(4096)
	defer stop()
	lastListeners := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-ch:
			if !ok {
				return nil
			}
			switch e.Kind {
			case cloud.EventCall:
				if e.Call != nil {
					publish("call", e.Call)
				}
			case cloud.EventInstance:
				if inst, ok := c.LookupInstance(e.ID); ok {
					publish("cloud", map[string]any{"kind": "instance", "op": "upsert", "id": e.ID, "object": inst})
				} else {
					publish("cloud", map[string]any{"kind": "instance", "op": "delete", "id": e.ID})
				}
			case cloud.EventLoadBalancer:
				if lb, ok := c.LookupLoadBalancer(e.ID); ok {
					publish("cloud", map[string]any{"kind": "loadbalancer", "op": "upsert", "id": e.ID, "object": lb})
				} else {
					publish("cloud", map[string]any{"kind": "loadbalancer", "op": "delete", "id": e.ID})
				}
			case cloud.EventRoute:
				publish("cloud", map[string]any{"kind": "routes", "routes": c.Snapshot().Routes})
			case cloud.EventFaults:
				publish("faults", c.Faults())
			case cloud.EventStepMode:
				publish("stepmode", map[string]any{"enabled": c.StepMode(), "waiting": nonNil(c.Waiting())})
			}
			if e.Kind == cloud.EventCall && e.Call != nil && e.Call.State == cloud.CallWaiting {
				publish("stepmode", map[string]any{"enabled": c.StepMode(), "waiting": nonNil(c.Waiting())})
			}
			// Listeners open and close shortly after LB changes; tell the
			// page when the set changed.
			if ls := fmt.Sprint(dp.Listeners()); ls != lastListeners {
				lastListeners = ls
				publish("listeners", listenerInfos(dp))
			}
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// stop ends everything startLab started and saves the cloud's state.
func (l *lab) stop() {
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
	if l.store != nil {
		_ = l.store.Close()
	}
	if l.cloud != nil {
		_ = l.cloud.Close()
	}
}

// requester adapts the data plane to the server's Requester.
type requester struct {
	dp   *dataplane.Dataplane
	flow *flow.Observer
}

func listenerInfos(dp *dataplane.Dataplane) []server.ListenerInfo {
	out := []server.ListenerInfo{}
	for _, li := range dp.Listeners() {
		out = append(out, server.ListenerInfo{LB: li.LB, Port: li.Port, Address: li.Address})
	}
	return out
}

func (r requester) Listeners() []server.ListenerInfo { return listenerInfos(r.dp) }

func (r requester) Traces() any { return nonNil(r.dp.Traces()) }

func (r requester) Send(ctx context.Context, spec server.RequestSpec) (any, error) {
	req := dataplane.Request{Kind: spec.Kind, LB: spec.LB, Node: spec.Node, Port: spec.Port}
	if spec.Service != "" {
		switch spec.Kind {
		case "loadbalancer":
			f, ok := r.flow.ServiceFlow(spec.Service)
			if !ok || f.LB == "" {
				return nil, fmt.Errorf("service %s has no load balancer yet", spec.Service)
			}
			req.LB = f.LB
		default:
			svc, ok := r.flow.Service(spec.Service)
			if !ok {
				return nil, fmt.Errorf("no service %s", spec.Service)
			}
			// Ports reads like kubectl's column: "80:31234/TCP".
			var port, nodePort int32
			if _, err := fmt.Sscanf(svc.Ports, "%d:%d/", &port, &nodePort); err != nil {
				_, _ = fmt.Sscanf(svc.Ports, "%d/", &port)
			}
			if spec.Kind == "clusterip" {
				req.IP = svc.ClusterIP
				req.Port = cmp.Or(req.Port, port)
			} else {
				req.Port = cmp.Or(req.Port, nodePort)
				if req.Port == 0 {
					return nil, fmt.Errorf("service %s has no NodePort", spec.Service)
				}
				// Every node answers on a NodePort; without a choice, the
				// first Ready one receives the request.
				for _, n := range r.flow.Snapshot().Nodes {
					if req.Node == "" && n.Ready == "True" {
						req.Node = n.Name
					}
				}
			}
		}
	}
	return r.dp.Do(ctx, req)
}
