// Package dataplane is the lab's network: what kube-proxy and the cloud's
// load balancers would do to a packet, computed from the real objects in the
// apiserver and the simulated cloud, so that step 6 of a LoadBalancer
// Service ("traffic") can be tried for real and explained hop by hop.
//
// It has four parts:
//
//   - Rules (routing.go, endpoints.go, pick.go): kube-proxy's and the load
//     balancer's decisions as pure functions of Services, EndpointSlices,
//     Nodes, Pods and a snapshot of the cloud. Nothing there watches,
//     listens or locks, so every rule can be checked with a table of
//     objects. A ClusterIP or a NodePort on
//     any node leads to the Service's ready endpoints; externalTrafficPolicy
//     Cluster may send the packet on to a Pod on another node (the extra hop)
//     and rewrites the source to the node's IP so replies come back the same
//     way; Local only uses the receiving node's own Pods, drops the packet
//     when there are none, and keeps the client's IP.
//   - Listeners (listeners.go): every load balancer listener in the cloud
//     gets a real TCP port on the loopback interface that speaks HTTP, so
//     `curl` works against it. The load balancer picks a healthy target
//     round-robin; an instance target is a node's NodePort (instance mode),
//     an ip target is a Pod IP (ip mode, the AWS Load Balancer Controller's
//     alternative, which needs Pod IPs the VPC can reach).
//   - Health (health.go): the load balancer's health checks, computed rather
//     than probed, and written back with cloud.SetTargetHealth. With
//     externalTrafficPolicy Local the check asks healthCheckNodePort, which
//     kube-proxy answers healthy only on nodes that have a ready local Pod;
//     that is how the load balancer learns to skip the other nodes.
//   - Traces (trace.go): every request, real or simulated with Do, leaves a
//     Trace of hops (client, lb, node, nodeport, dnat, forward, pod) kept in
//     a ring and fanned out to subscribers; the web page animates them.
//
// The AWS model's Classic ELBs and NLBs, which the upstream AWS provider
// makes, are load balancers here too (aws.go), with what AWS does on top:
// a Classic ELB proxies TCP, so the node sees the ELB's own VPC address;
// an NLB keeps the client's for instance targets; a PROXY protocol header
// carries the client to the Pod's access log; and security groups drop
// what no rule admits, the trace naming the rule that is missing.
//
// The Pods answer themselves (pod.go): an nginx image answers like nginx,
// anything else with a short text naming the Pod, its node and the source
// IP it saw, which is where students see SNAT happen or not.
//
// Between nodes, Pod traffic follows the cloud's network: Pod IPs that are
// VPC addresses (the vpc-cni profile) are reachable directly; in profiles
// with a Route controller a Pod CIDR is reachable only through a row of the
// VPC route table, so switching the Route controller off is visible in the
// traces; profiles without one are treated as an overlay network.
//
// Where each thing lives:
//
//   - dataplane.go: Config, New and Run (the informers, the cloud's events,
//     the periodic health round), WaitForSync.
//   - request.go: Request and Do, and route, the one way in for a simulated
//     request and a real connection to a listener alike.
//   - clusterindex.go: clusterView, what the rules read from the apiserver,
//     and its implementation over the informer caches with their six
//     indexers (NodePort, healthCheckNodePort, ClusterIP, EndpointSlice by
//     Service, Node by instance ID, Pod by IP).
//   - cloudindex.go: cloudView, one snapshot of the cloud indexed for
//     routing (load balancers by name and front, instances, VPC routes).
//   - env.go: env, what one routing decision reads, and the mapping between
//     Nodes and instances (and load balancers and Services).
//   - routing.go: a packet's way from a listener, a NodePort or a ClusterIP
//     to a Pod, hop by hop, and whether the network between nodes carries
//     it.
//   - endpoints.go: a Service port's endpoints from its EndpointSlices and
//     kube-proxy's choice among them; services.go: reading a Service's
//     ports, ClusterIPs and traffic policies.
//   - pick.go: choosing one of many, the load balancer's target and the
//     round-robin both it and kube-proxy use here.
//   - health.go, listeners.go, trace.go, aws.go, pod.go, accesslog.go: as
//     above; errors.go: RequestError; addr.go: host:port text.
package dataplane
