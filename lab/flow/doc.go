// Package flow tells, from what really happened, where each LoadBalancer
// Service stands in the six steps of the chapter and where each node stands
// in its initialization. It never runs a timer to advance a step: every step
// is backed by evidence (a watch event, a Kubernetes Event, a cloud API call
// in the call log, a load balancer in the cloud, a packet trace), and a step
// that cannot happen carries the reason why.
//
// The Observer also keeps the compact views of Nodes, Pods, Services and
// Events that the web view draws, so the data flows one way:
// apiserver watch + cloud call log -> flow -> hub -> browser.
package flow
