package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/yaml"

	"github.com/ccmlab/ccmlab/lab/kubevirt"
)

// The kubevirt profile's provider. The chapter's hands-on CCM is
// kubevirt-cloud-controller-manager (kubevirt/cloud-provider-kubevirt),
// whose module the Go proxy does not serve, so the lab keeps its own that
// behaves as that code does (issue 39 lists what it does; docs/
// architecture.md, "The management side", says it again): it reads
// VirtualMachineInstances in one namespace of the management apiserver,
// never the lab's cloud.

// KubevirtCloudConfig is the provider's cloud config, as the real one
// reads it (its keys: kubeconfig, namespace, loadBalancer.enabled,
// instancesV2.enabled, instancesV2.zoneAndRegionEnabled).
type KubevirtCloudConfig struct {
	Kubeconfig   string `json:"kubeconfig"`
	Namespace    string `json:"namespace"`
	LoadBalancer struct {
		Enabled bool `json:"enabled"`
	} `json:"loadBalancer"`
	InstancesV2 struct {
		Enabled              bool `json:"enabled"`
		ZoneAndRegionEnabled bool `json:"zoneAndRegionEnabled"`
	} `json:"instancesV2"`
}

// ParseKubevirtCloudConfig reads a cloud config; unknown keys are refused.
func ParseKubevirtCloudConfig(r io.Reader) (KubevirtCloudConfig, error) {
	var c KubevirtCloudConfig
	c.InstancesV2.Enabled = true
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("kubevirt cloud config: %w", err)
	}
	if c.Namespace == "" {
		return c, errors.New("kubevirt cloud config: namespace is required")
	}
	return c, nil
}

// Kubevirt is the kubevirt provider over the management apiserver.
type Kubevirt struct {
	cfg  KubevirtCloudConfig
	vmis dynamic.NamespaceableResourceInterface
	// nodes reads the infra Nodes (zone and region), when enabled.
	infra dynamic.Interface
	// life ends the provider's requests when its controller is switched
	// off.
	life context.Context
}

var (
	_ cloudprovider.Interface   = (*Kubevirt)(nil)
	_ cloudprovider.InstancesV2 = (*Kubevirt)(nil)
)

// NewKubevirt returns the provider for cfg over the management apiserver
// infra; its calls end with life.
func NewKubevirt(cfg KubevirtCloudConfig, infra dynamic.Interface, life context.Context) *Kubevirt {
	return &Kubevirt{cfg: cfg, vmis: infra.Resource(kubevirt.GVR), infra: infra, life: life}
}

func (k *Kubevirt) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer: only with loadBalancer.enabled (the chapter's CCM has it
// off, so no Service controller runs).
func (k *Kubevirt) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

func (k *Kubevirt) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 unless instancesV2.enabled is false.
func (k *Kubevirt) InstancesV2() (cloudprovider.InstancesV2, bool) {
	return k, k.cfg.InstancesV2.Enabled
}
func (k *Kubevirt) Zones() (cloudprovider.Zones, bool)       { return nil, false }
func (k *Kubevirt) Clusters() (cloudprovider.Clusters, bool) { return nil, false }
func (k *Kubevirt) Routes() (cloudprovider.Routes, bool)     { return nil, false }
func (k *Kubevirt) ProviderName() string                     { return "kubevirt" }
func (k *Kubevirt) HasClusterID() bool                       { return true }

func (k *Kubevirt) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	if k.life == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(k.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// errNoVMI: a Node with no VMI is a plain error, not InstanceNotFound.
var errNoVMI = errors.New("VirtualMachineInstance not found")

// instanceIDLabel names a Node's VMI when it differs from the Node's name.
const instanceIDLabel = "node.kubernetes.io/instance-id"

// find looks the Node's VMI up: by the instance-id label or the Node's
// name, then by spec.hostname among all VMIs of the namespace.
func (k *Kubevirt) find(ctx context.Context, node *v1.Node) (*kubevirt.VMI, error) {
	ctx, cancel := k.ctx(ctx)
	defer cancel()
	name := node.Name
	if id := node.Labels[instanceIDLabel]; id != "" {
		name = id
	}
	vmis := k.vmis.Namespace(k.cfg.Namespace)
	u, err := vmis.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return kubevirt.FromUnstructured(u.Object)
	}
	list, lerr := vmis.List(ctx, metav1.ListOptions{})
	if lerr != nil {
		return nil, fmt.Errorf("node %s: listing VMIs in %s: %w", node.Name, k.cfg.Namespace, lerr)
	}
	for i := range list.Items {
		v, err := kubevirt.FromUnstructured(list.Items[i].Object)
		if err == nil && v.Spec.Hostname == node.Name {
			return v, nil
		}
	}
	return nil, fmt.Errorf("node %s: %w in namespace %s (get: %v)", node.Name, errNoVMI, k.cfg.Namespace, err)
}

// InstanceExists: the Node's VMI exists.
func (k *Kubevirt) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	_, err := k.find(ctx, node)
	if errors.Is(err, errNoVMI) {
		return false, nil
	}
	return err == nil, err
}

// InstanceShutdown: the VMI's phase is Succeeded or Failed.
func (k *Kubevirt) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	v, err := k.find(ctx, node)
	if err != nil {
		return false, err
	}
	return v.Status.Phase == kubevirt.PhaseSucceeded || v.Status.Phase == kubevirt.PhaseFailed, nil
}

// InstanceMetadata: providerID kubevirt://<vmi>, the default interface's
// addresses as InternalIP and the Node's name as Hostname, the
// instancetype annotation, zone and region only when enabled.
func (k *Kubevirt) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	v, err := k.find(ctx, node)
	if err != nil {
		return nil, err
	}
	var addrs []v1.NodeAddress
	for _, ip := range v.InternalIPs() {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: node.Name})
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    "kubevirt://" + v.Name,
		NodeAddresses: slices.Clip(addrs),
		InstanceType:  v.Annotations[kubevirt.InstanceTypeAnnotation],
	}
	if k.cfg.InstancesV2.ZoneAndRegionEnabled && v.Status.NodeName != "" {
		zone, region, err := k.zoneOf(ctx, v.Status.NodeName)
		if err != nil {
			return nil, err
		}
		md.Zone, md.Region = zone, region
	}
	return md, nil
}

// zoneOf reads the topology labels of the infra Node a VMI runs on.
func (k *Kubevirt) zoneOf(ctx context.Context, nodeName string) (zone, region string, err error) {
	ctx, cancel := k.ctx(ctx)
	defer cancel()
	n, err := k.infra.Resource(v1.SchemeGroupVersion.WithResource("nodes")).Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("infra node %s: %w", nodeName, err)
	}
	l := n.GetLabels()
	return l[v1.LabelTopologyZone], l[v1.LabelTopologyRegion], nil
}
