package provider

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

var _ cloudprovider.Zones = (*Provider)(nil)

// GetZone would return the zone of the machine the CCM runs on. ccmlab's
// CCM runs inside the lab process, not on an instance, so there is none.
func (p *Provider) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, fmt.Errorf("the lab's CCM does not run on a cloud instance: %w", cloudprovider.NotImplemented)
}

// GetZoneByProviderID returns the zone and region of the instance a
// providerID names.
func (p *Provider) GetZoneByProviderID(ctx context.Context, providerID string) (cloudprovider.Zone, error) {
	ctx = cloud.WithMethod(ctx, "Zones.GetZoneByProviderID")
	return p.zoneOf(ctx, &v1.Node{Spec: v1.NodeSpec{ProviderID: providerID}})
}

// GetZoneByNodeName returns the zone and region of the named node's instance.
func (p *Provider) GetZoneByNodeName(ctx context.Context, nodeName types.NodeName) (cloudprovider.Zone, error) {
	ctx = cloud.WithMethod(ctx, "Zones.GetZoneByNodeName")
	node := &v1.Node{}
	node.Name = string(nodeName)
	return p.zoneOf(ctx, node)
}

func (p *Provider) zoneOf(ctx context.Context, node *v1.Node) (cloudprovider.Zone, error) {
	inst, found, err := p.findInstance(ctx, node)
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	if !found || inst.State == cloud.InstanceTerminated {
		return cloudprovider.Zone{}, cloudprovider.InstanceNotFound
	}
	return cloudprovider.Zone{FailureDomain: inst.Zone, Region: p.region}, nil
}
