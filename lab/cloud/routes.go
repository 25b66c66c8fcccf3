package cloud

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// Route states, as EC2 reports them. A route is a blackhole when its
// instance is terminated or gone: packets for that Pod CIDR are dropped,
// which is what the Route controller exists to clean up.
const (
	RouteActive    = "active"
	RouteBlackhole = "blackhole"
)

// Route sends a Pod CIDR to the instance (node) that hosts it.
type Route struct {
	DestinationCIDR string    `json:"destinationCIDR"`
	InstanceID      string    `json:"instanceID"`
	CreatedAt       time.Time `json:"createdAt"`
	// State is derived from the instance each time routes are read.
	State string `json:"state"`
}

// CreateRoute adds a route for cidr (masked, IPv4 or IPv6) via instanceID.
func (c *Cloud) CreateRoute(ctx context.Context, cidr, instanceID string) error {
	req := fmt.Sprintf("destination=%s instance=%s", cidr, instanceID)
	return c.call(ctx, ActionCreateRoute, req, []string{cidr, instanceID}, func(emit emitFunc) (string, error) {
		p, err := parseRouteCIDR(cidr)
		if err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		rec, ok := c.instances[instanceID]
		if !ok {
			return "", errorf(ErrInstanceNotFound, "The instance ID '%s' does not exist", instanceID)
		}
		if rec.State == InstanceTerminated {
			return "", errorf(ErrIncorrectState, "The instance '%s' is terminated; a route to it would be a blackhole", instanceID)
		}
		if _, dup := c.routes[p]; dup {
			return "", errorf(ErrRouteExists, "The route identified by %s already exists.", p)
		}
		c.routes[p] = &Route{DestinationCIDR: p.String(), InstanceID: instanceID, CreatedAt: c.now()}
		emit(EventRoute, p.String())
		return fmt.Sprintf("%s -> %s", p, instanceID), nil
	})
}

// DeleteRoute removes the route for cidr.
func (c *Cloud) DeleteRoute(ctx context.Context, cidr string) error {
	return c.call(ctx, ActionDeleteRoute, "destination="+cidr, []string{cidr}, func(emit emitFunc) (string, error) {
		p, err := parseRouteCIDR(cidr)
		if err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		r, ok := c.routes[p]
		if !ok {
			return "", errorf(ErrRouteNotFound, "There is no route defined for '%s' in the route table.", p)
		}
		delete(c.routes, p)
		emit(EventRoute, p.String())
		return fmt.Sprintf("deleted %s -> %s", p, r.InstanceID), nil
	})
}

// DescribeRouteTable lists the routes, ordered by destination.
func (c *Cloud) DescribeRouteTable(ctx context.Context) ([]Route, error) {
	var out []Route
	err := c.call(ctx, ActionDescribeRouteTables, "all", nil, func(emitFunc) (string, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		out = c.routesLocked()
		blackholes := 0
		for _, r := range out {
			if r.State == RouteBlackhole {
				blackholes++
			}
		}
		if blackholes > 0 {
			return fmt.Sprintf("%d routes (%d blackhole)", len(out), blackholes), nil
		}
		return fmt.Sprintf("%d routes", len(out)), nil
	})
	return out, err
}

func (c *Cloud) routesLocked() []Route {
	keys := slices.SortedFunc(maps.Keys(c.routes), comparePrefixes)
	out := make([]Route, len(keys))
	for i, k := range keys {
		r := *c.routes[k]
		r.State = RouteActive
		if rec, ok := c.instances[r.InstanceID]; !ok || rec.State == InstanceTerminated {
			r.State = RouteBlackhole
		}
		out[i] = r
	}
	return out
}

// comparePrefixes orders by address then length, so 10.244.2.0/24 sorts
// before 10.244.10.0/24 (string order would not).
func comparePrefixes(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

func parseRouteCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, errorf(ErrInvalidParameter, "Value (%s) for parameter destinationCidrBlock is invalid. This is not a valid CIDR block.", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, errorf(ErrInvalidParameter, "Value (%s) for parameter destinationCidrBlock is invalid. Host bits are set; did you mean %s?", s, p.Masked())
	}
	return p, nil
}
