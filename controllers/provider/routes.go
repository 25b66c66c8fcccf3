package provider

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

var _ cloudprovider.Routes = (*Provider)(nil)

// ListRoutes returns the route table with each row's instance turned back
// into a node name (the instance's private DNS name). A row whose instance
// is terminated or gone is a blackhole, which the Route controller deletes.
func (p *Provider) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	ctx = cloud.WithMethod(ctx, "Routes.ListRoutes")
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	rows, err := p.cloud.DescribeRouteTable(ctx)
	if err != nil {
		return nil, wrap(err, "listing routes")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	insts, err := p.cloud.DescribeInstances(ctx, cloud.DescribeInstancesInput{})
	if err != nil {
		return nil, wrap(err, "describing the instances routes point to")
	}
	nameOf := make(map[string]string, len(insts))
	for _, inst := range insts {
		if inst.State != cloud.InstanceTerminated {
			nameOf[inst.ID] = inst.PrivateDNSName
		}
	}
	out := make([]*cloudprovider.Route, 0, len(rows))
	for _, r := range rows {
		out = append(out, &cloudprovider.Route{
			Name:            r.DestinationCIDR,
			TargetNode:      types.NodeName(nameOf[r.InstanceID]),
			DestinationCIDR: r.DestinationCIDR,
			Blackhole:       r.State == cloud.RouteBlackhole,
		})
	}
	return out, nil
}

// CreateRoute adds a row sending route.DestinationCIDR (a node's podCIDR)
// to the node's instance.
func (p *Provider) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	ctx = cloud.WithMethod(ctx, "Routes.CreateRoute")
	node := string(route.TargetNode)
	inst, found, err := p.instanceByName(ctx, node)
	if err != nil {
		return err
	}
	if !found || inst.State == cloud.InstanceTerminated {
		return fmt.Errorf("creating route %s to node %s: %w", route.DestinationCIDR, node, cloudprovider.InstanceNotFound)
	}
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	return wrap(p.cloud.CreateRoute(ctx, route.DestinationCIDR, inst.ID), "creating route %s to node %s (%s)", route.DestinationCIDR, node, inst.ID)
}

// DeleteRoute removes a row; one that is already gone counts as deleted.
func (p *Provider) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	ctx = cloud.WithMethod(ctx, "Routes.DeleteRoute")
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	err = p.cloud.DeleteRoute(ctx, route.DestinationCIDR)
	if err == nil || cloud.IsCode(err, cloud.ErrRouteNotFound) {
		return nil
	}
	return wrap(err, "deleting route %s", route.DestinationCIDR)
}
