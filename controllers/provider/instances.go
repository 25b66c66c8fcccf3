package provider

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

var _ cloudprovider.InstancesV2 = (*Provider)(nil)

// InstanceExists reports whether the node's instance still exists. A
// terminated instance does not: that is the signal for the node-lifecycle
// controller to delete the Node.
func (p *Provider) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	ctx = cloud.WithMethod(ctx, "InstancesV2.InstanceExists")
	inst, found, err := p.findInstance(ctx, node)
	if err != nil {
		return false, err
	}
	return found && inst.State != cloud.InstanceTerminated, nil
}

// InstanceShutdown reports whether the node's instance is stopped (or
// stopping); the node-lifecycle controller then taints the Node with
// node.cloudprovider.kubernetes.io/shutdown.
func (p *Provider) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	ctx = cloud.WithMethod(ctx, "InstancesV2.InstanceShutdown")
	inst, found, err := p.findInstance(ctx, node)
	if err != nil || !found {
		return false, err
	}
	return inst.State == cloud.InstanceStopped || inst.State == cloud.InstanceStopping, nil
}

// InstanceMetadata is what the Node controller writes onto a new Node:
// providerID, addresses, instance type, zone and region.
func (p *Provider) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	ctx = cloud.WithMethod(ctx, "InstancesV2.InstanceMetadata")
	inst, found, err := p.findInstance(ctx, node)
	if err != nil {
		return nil, err
	}
	if !found || inst.State == cloud.InstanceTerminated {
		return nil, fmt.Errorf("node %q: %w (no running or stopped instance has that providerID or private DNS name)", node.Name, cloudprovider.InstanceNotFound)
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    p.ProviderID(inst),
		InstanceType:  inst.InstanceType,
		NodeAddresses: nodeAddresses(inst),
		Zone:          inst.Zone,
		Region:        p.region,
	}, nil
}

// nodeAddresses are the addresses the EC2 provider reports for an instance
// with a private address only.
func nodeAddresses(inst cloud.Instance) []v1.NodeAddress {
	return []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: inst.PrivateIP},
		{Type: v1.NodeHostName, Address: inst.PrivateDNSName},
		{Type: v1.NodeInternalDNS, Address: inst.PrivateDNSName},
	}
}

// findInstance finds the instance behind a Node: by providerID when the
// Node has one, otherwise by node name, which on this cloud is the
// instance's private DNS name. found is false when the cloud has no such
// instance at all; a terminated one is returned as found.
func (p *Provider) findInstance(ctx context.Context, node *v1.Node) (cloud.Instance, bool, error) {
	if node.Spec.ProviderID != "" {
		ref, err := p.profile.ParseProviderID(node.Spec.ProviderID)
		if err != nil {
			return cloud.Instance{}, false, fmt.Errorf("node %q: %w", node.Name, err)
		}
		if ref.InstanceID != "" {
			return p.instanceByID(ctx, ref.InstanceID)
		}
		return p.instanceByName(ctx, ref.NodeName)
	}
	return p.instanceByName(ctx, node.Name)
}

func (p *Provider) instanceByID(ctx context.Context, id string) (cloud.Instance, bool, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return cloud.Instance{}, false, err
	}
	defer end()
	out, err := p.cloud.DescribeInstances(ctx, cloud.DescribeInstancesInput{IDs: []string{id}})
	switch {
	case cloud.IsCode(err, cloud.ErrInstanceNotFound):
		return cloud.Instance{}, false, nil
	case err != nil:
		return cloud.Instance{}, false, wrap(err, "describing instance %s", id)
	case len(out) == 0:
		return cloud.Instance{}, false, nil
	}
	return out[0], true, nil
}

func (p *Provider) instanceByName(ctx context.Context, name string) (cloud.Instance, bool, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return cloud.Instance{}, false, err
	}
	defer end()
	out, err := p.cloud.DescribeInstances(ctx, cloud.DescribeInstancesInput{PrivateDNSNames: []string{name}})
	if err != nil {
		return cloud.Instance{}, false, wrap(err, "describing the instance named %s", name)
	}
	return pickInstance(out)
}

// pickInstance prefers a live instance over a terminated one with the same
// name (the cloud does not reuse names while a terminated one is listed,
// but a caller should not depend on that).
func pickInstance(list []cloud.Instance) (cloud.Instance, bool, error) {
	for _, inst := range list {
		if inst.State != cloud.InstanceTerminated {
			return inst, true, nil
		}
	}
	if len(list) > 0 {
		return list[0], true, nil
	}
	return cloud.Instance{}, false, nil
}
