package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// IPPermission is one ingress rule of a security group: a protocol ("tcp",
// "udp", "icmp" or "-1" for all), a port range and its sources.
type IPPermission struct {
	Protocol string   `json:"protocol"`
	FromPort int32    `json:"fromPort"`
	ToPort   int32    `json:"toPort"`
	CIDRs    []string `json:"cidrs,omitempty"`
	GroupIDs []string `json:"groupIDs,omitempty"`
	// Description is the rule's (IpRanges[].Description or
	// UserIdGroupPairs[].Description on the wire). A stored rule has one
	// source, so one description; it does not tell two rules apart, as on
	// AWS, but the upstream provider finds its NLB rules by it
	// (IPPermissionMatchDesc in cloud-provider-aws's
	// sets_ippermissions.go), so dropping it leaks them.
	Description string `json:"description,omitempty"`
}

// SecurityGroup is an EC2 security group of the lab's VPC.
type SecurityGroup struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	VPCID       string            `json:"vpcID"`
	Ingress     []IPPermission    `json:"ingress"`
	Tags        map[string]string `json:"tags,omitempty"`
}

func (g *SecurityGroup) clone() SecurityGroup {
	out := *g
	out.Ingress = make([]IPPermission, len(g.Ingress))
	for i, p := range g.Ingress {
		p.CIDRs = slices.Clone(p.CIDRs)
		p.GroupIDs = slices.Clone(p.GroupIDs)
		out.Ingress[i] = p
	}
	out.Tags = cloneTags(g.Tags)
	return out
}

// EventSecurityGroup is published when a security group changes.
const EventSecurityGroup = "securitygroup"

// DescribeSecurityGroupsAWS lists security groups by ID and filters
// (group-id, group-name, vpc-id, ip-permission.group-id, tag:K, tag-key).
func (c *Cloud) DescribeSecurityGroupsAWS(ctx context.Context, ids []string, filters []Filter) ([]SecurityGroup, error) {
	var out []SecurityGroup
	req := summarizeFilters(filters)
	if len(ids) > 0 {
		req = "ids=" + summarize(ids) + " " + req
	}
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeSecurityGroups, req, ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, id := range ids {
			if _, ok := c.aws.groups[id]; !ok {
				return "", errorf(ErrGroupNotFound, "The security group '%s' does not exist", id)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(c.aws.groups)) {
			g := c.aws.groups[id]
			if len(ids) > 0 && !slices.Contains(ids, id) {
				continue
			}
			var srcGroups []string
			for _, p := range g.Ingress {
				srcGroups = append(srcGroups, p.GroupIDs...)
			}
			ok, err := matchFilters(filters, []string{"group-id", "group-name", "vpc-id", "ip-permission.group-id", "description"},
				map[string][]string{"group-id": {g.ID}, "group-name": {g.Name}, "vpc-id": {g.VPCID}, "ip-permission.group-id": srcGroups, "description": {g.Description}}, g.Tags)
			if err != nil {
				return "", err
			}
			if ok {
				out = append(out, g.clone())
			}
		}
		return fmt.Sprintf("%d security groups", len(out)), nil
	})
	return out, err
}

// CreateSecurityGroup creates an empty group in the VPC; names are unique
// per VPC.
func (c *Cloud) CreateSecurityGroup(ctx context.Context, name, description, vpcID string, tags map[string]string) (string, error) {
	var id string
	err := c.awsCall(ctx, ServiceEC2, ActionCreateSecurityGroup, fmt.Sprintf("name=%s vpc=%s", name, vpcID), []string{name}, func(emit emitFunc) (string, error) {
		if name == "" || len(name) > 255 {
			return "", errorf("MissingParameter", "The request must contain the parameter groupName (1-255 characters)")
		}
		if description == "" {
			return "", errorf("MissingParameter", "The request must contain the parameter groupDescription")
		}
		if err := validateTags(tags); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if vpcID == "" {
			vpcID = c.aws.net.VPCID
		}
		if vpcID != c.aws.net.VPCID {
			return "", errorf("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", vpcID)
		}
		for _, g := range c.aws.groups {
			if g.Name == name {
				return "", errorf(ErrGroupDuplicate, "The security group '%s' already exists for VPC '%s'", name, vpcID)
			}
		}
		g := &SecurityGroup{ID: awsID("sg"), Name: name, Description: description, VPCID: vpcID, Tags: cloneTags(tags)}
		c.aws.groups[g.ID] = g
		id = g.ID
		emit(EventSecurityGroup, g.ID)
		return g.ID, nil
	})
	return id, err
}

// DeleteSecurityGroup deletes a group that nothing uses: a group another
// group's rule names, or a load balancer uses, answers DependencyViolation
// (the AWS provider polls until it goes through).
func (c *Cloud) DeleteSecurityGroup(ctx context.Context, id string) error {
	return c.awsCall(ctx, ServiceEC2, ActionDeleteSecurityGroup, "id="+id, []string{id}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.aws.groups[id]; !ok {
			return "", errorf(ErrGroupNotFound, "The security group '%s' does not exist", id)
		}
		if id == c.aws.net.NodeGroupID {
			return "", errorf(ErrDependencyViolation, "resource %s has a dependent object (the cluster's instances)", id)
		}
		for _, g := range c.aws.groups {
			if g.ID == id {
				continue
			}
			for _, p := range g.Ingress {
				if slices.Contains(p.GroupIDs, id) {
					return "", errorf(ErrDependencyViolation, "resource %s has a dependent object (a rule of %s)", id, g.ID)
				}
			}
		}
		for _, lb := range c.aws.elbs {
			if slices.Contains(lb.SecurityGroups, id) {
				return "", errorf(ErrDependencyViolation, "resource %s has a dependent object (load balancer %s)", id, lb.Name)
			}
		}
		for _, lb := range c.aws.nlbs {
			if slices.Contains(lb.SecurityGroups, id) {
				return "", errorf(ErrDependencyViolation, "resource %s has a dependent object (load balancer %s)", id, lb.Name)
			}
		}
		delete(c.aws.groups, id)
		emit(EventSecurityGroup, id)
		return "deleted " + id, nil
	})
}

// permKeys flattens rules into one key per source, the unit AWS adds and
// removes (a duplicate of any one fails the whole call).
func permKeys(ps []IPPermission) []IPPermission {
	var out []IPPermission
	for _, p := range ps {
		for _, cidr := range p.CIDRs {
			out = append(out, IPPermission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, CIDRs: []string{cidr}, Description: p.Description})
		}
		for _, g := range p.GroupIDs {
			out = append(out, IPPermission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, GroupIDs: []string{g}, Description: p.Description})
		}
	}
	return out
}

func permEqual(a, b IPPermission) bool {
	return a.Protocol == b.Protocol && a.FromPort == b.FromPort && a.ToPort == b.ToPort &&
		slices.Equal(a.CIDRs, b.CIDRs) && slices.Equal(a.GroupIDs, b.GroupIDs)
}

func summarizePerms(ps []IPPermission) string {
	var parts []string
	for _, p := range permKeys(ps) {
		src := ""
		if len(p.CIDRs) > 0 {
			src = p.CIDRs[0]
		} else {
			src = p.GroupIDs[0]
		}
		parts = append(parts, p.Protocol+":"+strconv.Itoa(int(p.FromPort))+"-"+strconv.Itoa(int(p.ToPort))+"<-"+src)
	}
	return summarize(parts)
}

func normalizePerm(p IPPermission) (IPPermission, error) {
	switch p.Protocol {
	case "tcp", "udp", "icmp", "-1", "all":
	case "6":
		p.Protocol = "tcp"
	case "17":
		p.Protocol = "udp"
	default:
		return p, errorf(ErrInvalidParameter, "Invalid value '%s' for IP protocol. Unknown protocol.", p.Protocol)
	}
	if p.Protocol == "all" {
		p.Protocol = "-1"
	}
	if p.Protocol == "-1" {
		p.FromPort, p.ToPort = -1, -1
	}
	if p.Protocol == "tcp" || p.Protocol == "udp" {
		if p.FromPort < 0 || p.ToPort > 65535 || p.FromPort > p.ToPort {
			return p, errorf(ErrInvalidParameter, "Invalid port range %d-%d", p.FromPort, p.ToPort)
		}
	}
	if len(p.CIDRs) == 0 && len(p.GroupIDs) == 0 {
		return p, errorf("MissingParameter", "An IP permission needs a CIDR range or a source security group")
	}
	if err := validateRuleDescription(p.Description); err != nil {
		return p, err
	}
	return p, nil
}

// validateRuleDescription holds a rule's description to EC2's constraint
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpRange.html):
// up to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*.
func validateRuleDescription(d string) error {
	if len(d) > 255 {
		return errorf(ErrInvalidParameter, "Invalid rule description. Valid descriptions are strings less than 256 characters from the following set:  a-zA-Z0-9. _-:/()#,@[]+=&;{}!$*")
	}
	for _, r := range d {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" ._-:/()#,@[]+=&;{}!$*", r)) {
			continue
		}
		return errorf(ErrInvalidParameter, "Invalid rule description. Valid descriptions are strings less than 256 characters from the following set:  a-zA-Z0-9. _-:/()#,@[]+=&;{}!$*")
	}
	return nil
}

// AuthorizeIngress adds rules to a group; any rule already present fails
// the call with InvalidPermission.Duplicate and changes nothing.
func (c *Cloud) AuthorizeIngress(ctx context.Context, groupID string, perms []IPPermission) error {
	return c.awsCall(ctx, ServiceEC2, ActionAuthorizeSecurityGroupIngress, "group="+groupID+" "+summarizePerms(perms), []string{groupID}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		g, ok := c.aws.groups[groupID]
		if !ok {
			return "", errorf(ErrGroupNotFound, "The security group '%s' does not exist", groupID)
		}
		var add []IPPermission
		for _, p := range perms {
			np, err := normalizePerm(p)
			if err != nil {
				return "", err
			}
			for _, gid := range np.GroupIDs {
				if _, ok := c.aws.groups[gid]; !ok {
					return "", errorf(ErrGroupNotFound, "The security group '%s' does not exist", gid)
				}
			}
			add = append(add, permKeys([]IPPermission{np})...)
		}
		have := permKeys(g.Ingress)
		for _, p := range add {
			if slices.ContainsFunc(have, func(h IPPermission) bool { return permEqual(h, p) }) {
				return "", errorf(ErrPermissionDuplicate, "the specified rule \"peer: %s, %s, from port: %d, to port: %d, ALLOW\" already exists",
					firstSource(p), p.Protocol, p.FromPort, p.ToPort)
			}
			have = append(have, p)
		}
		g.Ingress = have
		emit(EventSecurityGroup, groupID)
		return fmt.Sprintf("%d rules", len(g.Ingress)), nil
	})
}

func firstSource(p IPPermission) string {
	if len(p.CIDRs) > 0 {
		return p.CIDRs[0]
	}
	if len(p.GroupIDs) > 0 {
		return p.GroupIDs[0]
	}
	return ""
}

// RevokeIngress removes rules; a rule not present fails with
// InvalidPermission.NotFound and changes nothing.
func (c *Cloud) RevokeIngress(ctx context.Context, groupID string, perms []IPPermission) error {
	return c.awsCall(ctx, ServiceEC2, ActionRevokeSecurityGroupIngress, "group="+groupID+" "+summarizePerms(perms), []string{groupID}, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		g, ok := c.aws.groups[groupID]
		if !ok {
			return "", errorf(ErrGroupNotFound, "The security group '%s' does not exist", groupID)
		}
		have := permKeys(g.Ingress)
		for _, p := range perms {
			np, err := normalizePerm(p)
			if err != nil {
				return "", err
			}
			for _, k := range permKeys([]IPPermission{np}) {
				i := slices.IndexFunc(have, func(h IPPermission) bool { return permEqual(h, k) })
				if i < 0 {
					return "", errorf(ErrPermissionNotFound, "The specified rule does not exist in this security group.")
				}
				have = slices.Delete(have, i, i+1)
			}
		}
		g.Ingress = have
		emit(EventSecurityGroup, groupID)
		return fmt.Sprintf("%d rules", len(g.Ingress)), nil
	})
}
