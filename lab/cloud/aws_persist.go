package cloud

import (
	"fmt"
	"maps"
	"slices"
)

// savedAWS is the AWS model in the state file. The network IDs must
// survive a restart: the upstream provider's cloud config names the VPC
// and subnet, and resources it created name its security groups.
type savedAWS struct {
	Network         AWSNetwork      `json:"network"`
	SecurityGroups  []SecurityGroup `json:"securityGroups"`
	ClassicELBs     []ClassicELB    `json:"classicELBs"`
	NLBs            []NLB           `json:"nlbs"`
	TargetGroups    []TargetGroup   `json:"targetGroups"`
	Listeners       []NLBListener   `json:"listeners"`
	SourceDestCheck map[string]bool `json:"sourceDestCheck,omitempty"`
	Seq             uint64          `json:"seq"`
}

func (c *Cloud) savedAWSLocked() *savedAWS {
	a := c.aws
	s := &savedAWS{Network: a.net, Seq: a.seq, SourceDestCheck: maps.Clone(a.sourceDestCheck)}
	s.Network.Subnets = cloneSubnets(a.net.Subnets)
	for _, k := range slices.Sorted(maps.Keys(a.groups)) {
		s.SecurityGroups = append(s.SecurityGroups, a.groups[k].clone())
	}
	for _, k := range slices.Sorted(maps.Keys(a.elbs)) {
		s.ClassicELBs = append(s.ClassicELBs, a.elbs[k].clone())
	}
	for _, k := range slices.Sorted(maps.Keys(a.nlbs)) {
		s.NLBs = append(s.NLBs, a.nlbs[k].clone())
	}
	for _, k := range slices.Sorted(maps.Keys(a.tgs)) {
		s.TargetGroups = append(s.TargetGroups, a.tgs[k].clone())
	}
	for _, k := range slices.Sorted(maps.Keys(a.lsns)) {
		s.Listeners = append(s.Listeners, *a.lsns[k])
	}
	return s
}

// restoreAWS rebuilds the AWS model; a state file from before the model
// existed (nil) gets a fresh network.
func (c *Cloud) restoreAWS(s *savedAWS) error {
	if s == nil {
		return nil
	}
	if s.Network.VPCID == "" || s.Network.CIDR != c.net.vpc.String() {
		return fmt.Errorf("AWS network %s has CIDR %q, the VPC is %s", s.Network.VPCID, s.Network.CIDR, c.net.vpc)
	}
	for _, z := range c.cfg.Zones {
		if _, ok := s.Network.SubnetOf(z); !ok {
			return fmt.Errorf("AWS network has no subnet for zone %s", z)
		}
	}
	a := c.aws
	a.net = s.Network
	a.net.Subnets = cloneSubnets(s.Network.Subnets)
	for i, sn := range a.net.Subnets {
		if sn.Tags == nil { // a state file from before subnets had tags
			a.net.Subnets[i].Tags = c.DefaultSubnetTags(sn.Zone)
		}
	}
	a.seq = s.Seq
	for _, g := range s.SecurityGroups {
		g := g.clone()
		a.groups[g.ID] = &g
	}
	if _, ok := a.groups[a.net.NodeGroupID]; !ok {
		return fmt.Errorf("the nodes' security group %s is missing", a.net.NodeGroupID)
	}
	for _, lb := range s.ClassicELBs {
		lb := lb.clone()
		a.elbs[lb.Name] = &lb
	}
	for _, lb := range s.NLBs {
		lb := lb.clone()
		a.nlbs[lb.ARN] = &lb
	}
	for _, tg := range s.TargetGroups {
		tg := tg.clone()
		a.tgs[tg.ARN] = &tg
	}
	for _, l := range s.Listeners {
		l := l
		a.lsns[l.ARN] = &l
	}
	maps.Copy(a.sourceDestCheck, s.SourceDestCheck)
	return nil
}
