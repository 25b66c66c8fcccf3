// Package outside is the lab's load balancers as a client outside the
// VPC reaches them: the student's shell (`ccmlab curl`) and the page's
// console. It is a podruntime.Network for podruntime.Curl, so those
// requests run through the same curl as a Pod's.
//
// The rules follow AWS's: an internet-facing load balancer's DNS name
// resolves publicly and its listeners answer from the internet; an
// internal one's name resolves publicly too, but to private addresses
// that no client outside the VPC can reach, so a connection times out
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-internal-load-balancers.html).
// A ClusterIP, a Pod's or a node's address is as private.
//
// It is an allowlist: a name resolves only when it is one of the lab's
// load balancers (or localhost), and a request connects only to a
// loopback address: an internet-facing load balancer's listener (its
// real port on loopback), or, for the student's own shell, any loopback
// port. Every other address is either private (it times out, as on AWS)
// or refused: the lab never sends a packet off loopback.
package outside
