// Package dnstest holds the integration tests of the cluster DNS and
// kube-system's add-ons (app/sim/kubesystem.go, lab/dataplane/dns.go) on
// the lab `ccmlab serve` builds: CoreDNS behind kube-dns answering the
// Pods' queries, kube-proxy on every node, driven with the system's
// kubectl as a student drives it.
package dnstest
