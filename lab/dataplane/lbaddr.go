package dataplane

import "github.com/ccmlab/ccmlab/lab/cloud"

// LBAddresses are the addresses lb's DNS name resolves to inside the VPC
// (lbAddresses): what AWS's public DNS also answers for an internal load
// balancer's name, whose nodes have only private addresses
// (docs/architecture.md, "curl from the student's shell").
func LBAddresses(lb *cloud.LoadBalancer) []string { return lbAddresses(lb) }
