// Package ippool is the lab's one IPv4 address pool: the simulated cloud
// takes instance and load balancer addresses from it, the simulated kubelets
// take Pod addresses from it.
//
// A Pool walks a cursor forward through its prefix instead of always taking
// the lowest free address, so an address released a moment ago is not handed
// straight to the next instance or Pod: a stale Node, Endpoint or load
// balancer target still pointing at it would otherwise silently reach the
// wrong one. The cursor wraps around, so a full pool with one free address
// still finds it.
package ippool
