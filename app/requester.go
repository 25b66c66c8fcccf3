package app

import (
	"cmp"
	"context"
	"fmt"

	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/server"
	"github.com/ccmlab/ccmlab/server/stream"
)

// requester adapts the data plane to the server's Requester.
type requester struct {
	dp   *dataplane.Dataplane
	flow *flow.Observer
}

func listeners(dp *dataplane.Dataplane) stream.Listeners {
	out := stream.Listeners{}
	for _, li := range dp.Listeners() {
		out = append(out, stream.Listener{LB: li.LB, Port: li.Port, Address: li.Address})
	}
	return out
}

func (r requester) Listeners() stream.Listeners { return listeners(r.dp) }

func (r requester) Traces() any { return nonNil(r.dp.Traces()) }

// HealthCheckTimeScale is the data plane's health-check time factor, for
// the page.
func (r requester) HealthCheckTimeScale() int { return r.dp.HealthCheckTimeScale() }

func (r requester) RecentTraces(n int) []stream.Trace {
	all := r.dp.Traces()
	all = all[max(0, len(all)-n):]
	out := make([]stream.Trace, len(all))
	for i, t := range all {
		out[i] = stream.Trace(t)
	}
	return out
}

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
			// Without a port asked for, the Service's first one.
			var port, nodePort int32
			if len(svc.PortSpecs) > 0 {
				port, nodePort = svc.PortSpecs[0].Port, svc.PortSpecs[0].NodePort
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

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
