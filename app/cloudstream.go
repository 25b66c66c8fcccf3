package app

import (
	"context"
	"fmt"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/server/stream"
)

// streamCloud forwards the cloud's changes to the page: every call (twice:
// when it starts and when it ends, same seq), each instance or load balancer
// as a whole object, the route table, faults and step mode.
func streamCloud(ctx context.Context, c *cloud.Cloud, dp *dataplane.Dataplane, pub publisher) error {
	ch, stop := c.Subscribe(4096)
	defer stop()
	lastListeners := ""
	stepMode := func() stream.StepMode {
		return stream.StepMode{Enabled: c.StepMode(), Waiting: nonNil(c.Waiting())}
	}
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
					pub.publish(stream.Call(*e.Call))
				}
			case cloud.EventInstance:
				m := stream.InstanceChange{Kind: stream.KindInstance, Op: stream.OpDelete, ID: e.ID}
				if inst, ok := c.LookupInstance(e.ID); ok {
					m.Op, m.Object = stream.OpUpsert, &inst
				}
				pub.publish(m)
			case cloud.EventLoadBalancer:
				m := stream.LoadBalancerChange{Kind: stream.KindLoadBalancer, Op: stream.OpDelete, ID: e.ID}
				if lb, ok := c.LookupLoadBalancer(e.ID); ok {
					m.Op, m.Object = stream.OpUpsert, &lb
				}
				pub.publish(m)
			case cloud.EventELB:
				// A Classic ELB or NLB (or one of its target groups or
				// listeners) changed: the page gets its view as a load
				// balancer, like the lab's own.
				for _, name := range c.AWSLoadBalancerName(e.ID) {
					m := stream.LoadBalancerChange{Kind: stream.KindLoadBalancer, Op: stream.OpDelete, ID: name}
					if lb, ok := c.LookupLoadBalancer(name); ok {
						m.Op, m.Object = stream.OpUpsert, &lb
					}
					pub.publish(m)
				}
			case cloud.EventRoute:
				pub.publish(stream.RoutesChange{Kind: stream.KindRoutes, Routes: c.Snapshot().Routes})
			case cloud.EventFaults:
				pub.publish(stream.Faults(c.Faults()))
			case cloud.EventStepMode:
				pub.publish(stepMode())
			}
			if e.Kind == cloud.EventCall && e.Call != nil && e.Call.State == cloud.CallWaiting {
				pub.publish(stepMode())
			}
			// Listeners open and close shortly after LB changes; tell the
			// page when the set changed.
			if ls := fmt.Sprint(dp.Listeners()); ls != lastListeners {
				lastListeners = ls
				pub.publish(listeners(dp))
			}
		}
	}
}
