package cloud

// The console view: what the lab's own watchers (the web view, the flow
// tracker, the data plane) read. Unlike the API methods these are not calls
// a cloud customer makes, so they bypass IAM, limits and step mode and never
// appear in the call log; otherwise a student watching the log would see the
// lab watching itself.

// LookupLoadBalancer returns a copy of the named load balancer.
func (c *Cloud) LookupLoadBalancer(name string) (LoadBalancer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	lb, ok := c.lbs[name]
	if !ok {
		return LoadBalancer{}, false
	}
	return lb.clone(), true
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
