package cloud

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Secondary private IPv4 addresses on the nodes' primary network
// interfaces: the vpc-cni profile's Pod IPs.
//
// On EKS the VPC CNI's ipamd (the aws-node DaemonSet) assigns secondary
// private IPv4 addresses to the node's ENIs and hands them to Pods
// (https://docs.aws.amazon.com/eks/latest/best-practices/vpc-cni.html);
// DescribeInstances and DescribeNetworkInterfaces list them beside the
// primary address, with Primary false
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstancePrivateIpAddress.html,
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_NetworkInterfacePrivateIpAddress.html).
// The AWS Load Balancer Controller finds a Pod's ENI for an ip target by
// looking for the Pod's IP among its node's ENI addresses
// (pkg/networking/pod_eni_info_resolver.go, resolveViaNodeENIs and
// isPodSupportedByNodeENI in sigs.k8s.io/aws-load-balancer-controller/v3
// v3.6.2).
//
// The lab's kubelets play ipamd: they assign exactly the addresses their
// Pods hold (no warm pool) and take them off when a Pod goes. These are
// not EC2 API calls (ipamd's own AssignPrivateIpAddresses calls come in
// batches, per ENI, not per Pod), so they are not in the call log. Two lab
// simplifications: the addresses come from the upper half of the VPC
// (lab/kubelet's vpcPodRange), not from the ENI's subnet as ipamd's do, and
// they are not saved with the state: after a restart the kubelets assign
// them again as they adopt their Pods' IPs.

// podAddrTable holds each instance's secondary addresses, sorted, by
// instance ID.
type podAddrTable map[string][]netip.Addr

// AssignPodAddress puts addr on instance id's primary network interface as
// a secondary private IPv4 address. An address another instance holds moves
// (the lab's Pods never share one; a move means the other Pod's release has
// not come through yet). The instance must exist, not be terminated, and
// addr must be in the VPC and not be an instance's primary address.
func (c *Cloud) AssignPodAddress(id string, addr netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.instances[id]
	if !ok || rec.State == InstanceTerminated {
		return errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", id)
	}
	if !addr.Is4() || !c.net.vpc.Contains(addr) {
		return fmt.Errorf("address %s is not in the VPC %s", addr, c.net.vpc)
	}
	for _, r := range c.instances {
		if r.PrivateIP == addr.String() {
			return fmt.Errorf("address %s is instance %s's primary address", addr, r.ID)
		}
	}
	a := c.aws
	if a.podAddrs == nil {
		a.podAddrs = podAddrTable{}
	}
	for other, addrs := range a.podAddrs {
		if _, ok := c.instances[other]; !ok {
			delete(a.podAddrs, other) // purged since: its interface is gone
		} else if other != id {
			c.dropPodAddrLocked(other, addr)
		} else if slices.Contains(addrs, addr) {
			return nil
		}
	}
	addrs := append(a.podAddrs[id], addr)
	slices.SortFunc(addrs, func(x, y netip.Addr) int { return x.Compare(y) })
	a.podAddrs[id] = addrs
	return nil
}

// UnassignPodAddress takes addr off instance id's interface, if it is
// there; anything else (an address that moved, a forgotten instance) is a
// no-op, so a late release never takes an address from its new holder.
func (c *Cloud) UnassignPodAddress(id string, addr netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropPodAddrLocked(id, addr)
}

func (c *Cloud) dropPodAddrLocked(id string, addr netip.Addr) {
	a := c.aws
	addrs := slices.DeleteFunc(slices.Clone(a.podAddrs[id]), func(x netip.Addr) bool { return x == addr })
	if len(addrs) == 0 {
		delete(a.podAddrs, id)
		return
	}
	a.podAddrs[id] = addrs
}

// SecondaryAddress is a secondary private IPv4 address of an instance's
// network interface, with its private DNS name, formed as the primary
// address's is.
type SecondaryAddress struct {
	IP             string
	PrivateDNSName string
}

// podAddrsLocked are rec's secondary addresses, in order; none once it is
// terminated (its interface went with it).
func (c *Cloud) podAddrsLocked(rec *instanceRec) []SecondaryAddress {
	if rec.State == InstanceTerminated {
		return nil
	}
	var out []SecondaryAddress
	for _, a := range c.aws.podAddrs[rec.ID] {
		ip := a.String()
		out = append(out, SecondaryAddress{IP: ip, PrivateDNSName: "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + c.cfg.Region + ".compute.internal"})
	}
	return out
}

// secondaryIPs are the addresses alone.
func secondaryIPs(as []SecondaryAddress) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.IP
	}
	return out
}
