package cloud

// The console view: what the lab's own watchers (the web view, the flow
// tracker, the data plane) read. Unlike the API methods these are not calls
// a cloud customer makes, so they bypass IAM, limits and step mode and never
// appear in the call log; otherwise a student watching the log would see the
// lab watching itself.

// LookupLoadBalancer returns a copy of the named load balancer: the lab's
// own provider's, or the view of an AWS Classic ELB or NLB (Kind tells
// which), so a watcher reads either provider's load balancers one way.
func (c *Cloud) LookupLoadBalancer(name string) (LoadBalancer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if lb, ok := c.lbs[name]; ok {
		return lb.clone(), true
	}
	return c.awsLoadBalancerLocked(name)
}

// LookupInstance returns a copy of the instance with the given ID or private
// DNS name (which is also its node name).
func (c *Cloud) LookupInstance(idOrName string) (Instance, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if id, ok := c.byDNS[idOrName]; ok {
		idOrName = id
	}
	rec, ok := c.instances[idOrName]
	if !ok {
		return Instance{}, false
	}
	return rec.clone(), true
}
