// Package lowports is the lab's opt-in low-port mode (`ccmlab serve
// --lb-addresses`): each internet-facing load balancer gets its own
// loopback address (127.0.1.x, from a bounded pool) listening on its
// real listener ports (80, 443, ...), and a DNS server on a loopback
// address (127.0.2.53:53) answers the lab's load-balancer names as the
// public DNS does for a client outside the VPC: an internet-facing name
// gets its address here; an internal one no address (AWS gives its
// private addresses, which a host's client would look for on its own
// network, off loopback); every other name is NXDOMAIN. An unchanged client whose resolver is the lab's (a
// container's resolv.conf, a test harness's mount namespace) then
// reaches http://<hostname>/ on port 80, as on AWS.
//
// A connection to a load balancer's address is carried, byte for byte,
// to the data plane's listener for that load balancer and port (its
// 127.0.0.1:<ephemeral> port), which routes it as any other.
//
// It needs what few machines give a student: ports below 1024 (root,
// CAP_NET_BIND_SERVICE, a container, CI) and the whole of 127.0.0.0/8
// on the loopback interface (Linux; macOS configures only 127.0.0.1, so
// there the mode is refused: mode_other.go). Check says which is
// missing before the lab starts.
package lowports
