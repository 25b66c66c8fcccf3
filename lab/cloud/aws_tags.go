package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// ClusterTagKey is the tag the AWS provider looks for on the resources of
// its cluster; the value is "owned" or "shared".
func (c *Cloud) ClusterTagKey() string { return "kubernetes.io/cluster/" + c.cfg.ClusterID }

// CreateTags tags instances, security groups and subnets (and accepts,
// without storing, the VPC's, route table's and gateway's IDs, whose tags
// are the lab's).
func (c *Cloud) CreateTags(ctx context.Context, ids []string, tags map[string]string) error {
	return c.awsCall(ctx, ServiceEC2, ActionCreateTags, "ids="+summarize(ids)+" tags="+summarizeTags(tags), ids, func(emit emitFunc) (string, error) {
		if err := validateTags(tags); err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			if !c.ec2ResourceExistsLocked(id) {
				return "", errorf(ErrInvalidParameter, "The ID '%s' is not valid", id)
			}
		}
		for _, id := range ids {
			if tags0, ev := c.storedTagsLocked(id); tags0 != nil {
				if *tags0 == nil {
					*tags0 = map[string]string{}
				}
				maps.Copy(*tags0, tags)
				emit(ev, id)
			}
		}
		return fmt.Sprintf("tagged %d resources", len(ids)), nil
	})
}

// DeleteTags removes tag keys from instances, security groups and subnets.
func (c *Cloud) DeleteTags(ctx context.Context, ids []string, keys []string) error {
	return c.awsCall(ctx, ServiceEC2, ActionDeleteTags, "ids="+summarize(ids)+" keys="+summarize(keys), ids, func(emit emitFunc) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			if !c.ec2ResourceExistsLocked(id) {
				return "", errorf(ErrInvalidParameter, "The ID '%s' is not valid", id)
			}
		}
		for _, id := range ids {
			if tags, ev := c.storedTagsLocked(id); tags != nil {
				for _, k := range keys {
					delete(*tags, k)
				}
				emit(ev, id)
			}
		}
		return fmt.Sprintf("untagged %d resources", len(ids)), nil
	})
}

// storedTagsLocked is where the lab keeps the tags of resource id, and
// the event a change of them makes: instances, security groups and
// subnets; nil for the others (the VPC's, route table's and gateway's
// tags are the lab's own).
func (c *Cloud) storedTagsLocked(id string) (*map[string]string, string) {
	if rec, ok := c.instances[id]; ok {
		return &rec.Tags, EventInstance
	}
	if g, ok := c.aws.groups[id]; ok {
		return &g.Tags, EventSecurityGroup
	}
	if i := c.subnetIndexLocked(id); i >= 0 {
		return &c.aws.net.Subnets[i].Tags, EventSubnet
	}
	return nil, ""
}

func (c *Cloud) ec2ResourceExistsLocked(id string) bool {
	if _, ok := c.instances[id]; ok {
		return true
	}
	if _, ok := c.aws.groups[id]; ok {
		return true
	}
	n := c.aws.net
	return id == n.VPCID || id == n.RouteTableID || id == n.InternetGatewayID ||
		slices.ContainsFunc(n.Subnets, func(s AWSSubnet) bool { return s.ID == id })
}

// TaggedResource is an EC2 resource with its tags, for DescribeTags; Type
// is EC2's resource type (instance, security-group, subnet, vpc,
// route-table).
type TaggedResource struct {
	ID, Type string
	Tags     map[string]string
}

// TaggedResources lists the tags of every EC2 resource the lab has, in
// one EC2 DescribeTags call.
func (c *Cloud) TaggedResources(ctx context.Context) ([]TaggedResource, error) {
	var out []TaggedResource
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeTags, "all", nil, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, rec := range c.sortedInstancesLocked() {
			v := c.instanceViewLocked(rec)
			out = append(out, TaggedResource{ID: v.ID, Type: "instance", Tags: v.Tags})
		}
		for _, id := range slices.Sorted(maps.Keys(c.aws.groups)) {
			out = append(out, TaggedResource{ID: id, Type: "security-group", Tags: cloneTags(c.aws.groups[id].Tags)})
		}
		n := c.aws.net
		for _, s := range n.Subnets {
			out = append(out, TaggedResource{ID: s.ID, Type: "subnet", Tags: cloneTags(s.Tags)})
		}
		out = append(out, TaggedResource{ID: n.VPCID, Type: "vpc", Tags: map[string]string{c.ClusterTagKey(): "owned"}},
			TaggedResource{ID: n.RouteTableID, Type: "route-table", Tags: map[string]string{c.ClusterTagKey(): "owned", "Name": c.cfg.ClusterID}})
		return fmt.Sprintf("%d resources", len(out)), nil
	})
	return out, err
}
