package cloud

import (
	"context"
	"fmt"
)

// RouteTableView is the cluster's route table as EC2 describes it.
type RouteTableView struct {
	ID     string
	VPCID  string
	Tags   map[string]string
	Routes []AWSRoute
	// Subnets associated with it (all of them: it is the VPC's main table).
	SubnetIDs []string
}

// AWSRoute is one row of the route table: local, the internet gateway, or
// a Pod CIDR to an instance (Route).
type AWSRoute struct {
	DestinationCIDR string
	GatewayID       string // "local" or the igw
	InstanceID      string
	State           string
	Origin          string // CreateRouteTable or CreateRoute
}

// DescribeRouteTablesAWS answers EC2 DescribeRouteTables (filters
// route-table-id, vpc-id, tag:K, tag-key).
func (c *Cloud) DescribeRouteTablesAWS(ctx context.Context, ids []string, filters []Filter) ([]RouteTableView, error) {
	var out []RouteTableView
	err := c.awsCall(ctx, ServiceEC2, ActionDescribeRouteTables, summarizeFilters(filters), ids, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		n := c.aws.net
		for _, id := range ids {
			if id != n.RouteTableID {
				return "", errorf(ErrRouteTableNotFound, "The routeTable ID '%s' does not exist", id)
			}
		}
		tags := map[string]string{c.ClusterTagKey(): "owned", "Name": c.cfg.ClusterID}
		ok, err := matchFilters(filters, []string{"route-table-id", "vpc-id"}, map[string][]string{"route-table-id": {n.RouteTableID}, "vpc-id": {n.VPCID}}, tags)
		if err != nil || !ok {
			return "0 route tables", err
		}
		rt := RouteTableView{ID: n.RouteTableID, VPCID: n.VPCID, Tags: tags}
		rt.Routes = append(rt.Routes,
			AWSRoute{DestinationCIDR: n.CIDR, GatewayID: "local", State: RouteActive, Origin: "CreateRouteTable"},
			AWSRoute{DestinationCIDR: "0.0.0.0/0", GatewayID: n.InternetGatewayID, State: RouteActive, Origin: "CreateRoute"})
		for _, r := range c.routesLocked() {
			rt.Routes = append(rt.Routes, AWSRoute{DestinationCIDR: r.DestinationCIDR, InstanceID: r.InstanceID, State: r.State, Origin: "CreateRoute"})
		}
		for _, s := range n.Subnets {
			rt.SubnetIDs = append(rt.SubnetIDs, s.ID)
		}
		out = []RouteTableView{rt}
		return fmt.Sprintf("1 route table, %d routes", len(rt.Routes)), nil
	})
	return out, err
}

// CheckRouteTable reports whether id is the cluster's route table, for
// CreateRoute and DeleteRoute, which name it.
func (c *Cloud) CheckRouteTable(id string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if id != c.aws.net.RouteTableID {
		return errorf(ErrRouteTableNotFound, "The routeTable ID '%s' does not exist", id)
	}
	return nil
}
