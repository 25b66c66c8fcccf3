package provider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmlab/ccmlab/controllers/internal/live"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

var _ cloudprovider.LoadBalancer = (*Provider)(nil)

// Tags every load balancer made for a Service carries, as the in-tree AWS
// provider writes them.
const (
	TagServiceName   = "kubernetes.io/service-name"
	TagClusterPrefix = "kubernetes.io/cluster/"
	TagOwned         = "owned"
)

// Health check settings for externalTrafficPolicy: Local, where kube-proxy
// answers on spec.healthCheckNodePort with whether the node has a ready Pod.
const localHealthCheckPath = "/healthz"

// annotationLBType is the annotation cloud-provider-aws reads to leave a
// Service to the AWS Load Balancer Controller.
const annotationLBType = "service.beta.kubernetes.io/aws-load-balancer-type"

// implementedElsewhere: like cloud-provider-aws, a Service annotated
// aws-load-balancer-type external (or nlb-ip) belongs to the load balancer
// controller; the Service controller then adds its finalizer and records
// EnsuringLoadBalancer, and does nothing more.
func implementedElsewhere(service *v1.Service) bool {
	v := service.Annotations[annotationLBType]
	return v == "external" || v == "nlb-ip"
}

// GetLoadBalancerName is the upstream default: "a" + the Service's UID
// without dashes, cut to 32 characters (ELB's limit).
func (p *Provider) GetLoadBalancerName(_ context.Context, _ string, service *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(service)
}

// GetLoadBalancer reports whether the Service's load balancer exists and,
// if so, its status.
func (p *Provider) GetLoadBalancer(ctx context.Context, clusterName string, service *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	ctx = cloud.WithMethod(ctx, "LoadBalancer.GetLoadBalancer")
	if implementedElsewhere(service) {
		return nil, false, nil
	}
	lb, found, err := p.describeLB(ctx, p.GetLoadBalancerName(ctx, clusterName, service))
	if err != nil || !found {
		return nil, false, err
	}
	return lbStatus(lb), true, nil
}

// EnsureLoadBalancer creates the Service's load balancer if missing and
// makes its listeners, targets and health check match the Service and nodes.
// These are steps 3 and 4 of the lab's six; the Service controller does the
// rest (finalizer, events, writing the returned status).
func (p *Provider) EnsureLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	ctx = cloud.WithMethod(ctx, "LoadBalancer.EnsureLoadBalancer")
	if implementedElsewhere(service) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	name := p.GetLoadBalancerName(ctx, clusterName, service)
	listeners, err := serviceListeners(service)
	if err != nil {
		return nil, err
	}
	lb, found, err := p.describeLB(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		if err := p.confirmService(ctx, service); err != nil {
			return nil, err
		}
		lb, err = p.createLB(ctx, clusterName, service, name, listeners)
		if err != nil {
			return nil, err
		}
	} else if !listenersEqual(lb.Listeners, listeners) {
		if lb, err = p.setListeners(ctx, name, listeners); err != nil {
			return nil, err
		}
	}
	if err := p.syncTargets(ctx, lb, service, nodes); err != nil {
		return nil, err
	}
	if err := p.ensureHealthCheck(ctx, lb, service); err != nil {
		return nil, err
	}
	return lbStatus(lb), nil
}

// confirmService checks with the apiserver that the Service still exists
// as the controller saw it (see package live for why).
func (p *Provider) confirmService(ctx context.Context, service *v1.Service) error {
	if p.services == nil {
		return nil
	}
	return live.ConfirmService(ctx, p.services, service)
}

// UpdateLoadBalancer brings the targets in line with a changed set of nodes.
func (p *Provider) UpdateLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes []*v1.Node) error {
	ctx = cloud.WithMethod(ctx, "LoadBalancer.UpdateLoadBalancer")
	if implementedElsewhere(service) {
		return cloudprovider.ImplementedElsewhere
	}
	name := p.GetLoadBalancerName(ctx, clusterName, service)
	lb, found, err := p.describeLB(ctx, name)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("updating targets of load balancer %s for service %s/%s: it does not exist", name, service.Namespace, service.Name)
	}
	return p.syncTargets(ctx, lb, service, nodes)
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer; one that is
// already gone counts as deleted.
func (p *Provider) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *v1.Service) error {
	ctx = cloud.WithMethod(ctx, "LoadBalancer.EnsureLoadBalancerDeleted")
	if implementedElsewhere(service) {
		return nil // never ImplementedElsewhere here: the finalizer must go
	}
	name := p.GetLoadBalancerName(ctx, clusterName, service)
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	err = p.cloud.DeleteLoadBalancer(ctx, name)
	if err == nil || cloud.IsCode(err, cloud.ErrLBNotFound) {
		return nil
	}
	return wrap(err, "deleting load balancer %s for service %s/%s", name, service.Namespace, service.Name)
}

func (p *Provider) describeLB(ctx context.Context, name string) (cloud.LoadBalancer, bool, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return cloud.LoadBalancer{}, false, err
	}
	defer end()
	out, err := p.cloud.DescribeLoadBalancers(ctx, name)
	switch {
	case cloud.IsCode(err, cloud.ErrLBNotFound):
		return cloud.LoadBalancer{}, false, nil
	case err != nil:
		return cloud.LoadBalancer{}, false, wrap(err, "describing load balancer %s", name)
	case len(out) == 0:
		return cloud.LoadBalancer{}, false, nil
	}
	return out[0], true, nil
}

func (p *Provider) createLB(ctx context.Context, clusterName string, service *v1.Service, name string, listeners []cloud.Listener) (cloud.LoadBalancer, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return cloud.LoadBalancer{}, err
	}
	defer end()
	lb, err := p.cloud.CreateLoadBalancer(ctx, cloud.CreateLoadBalancerInput{
		Name:       name,
		Listeners:  listeners,
		TargetType: cloud.TargetTypeInstance,
		Tags: map[string]string{
			TagServiceName: service.Namespace + "/" + service.Name,
			TagClusterPrefix + cmp.Or(clusterName, p.clusterName): TagOwned,
		},
	})
	return lb, wrap(err, "creating load balancer %s for service %s/%s", name, service.Namespace, service.Name)
}

func (p *Provider) setListeners(ctx context.Context, name string, ls []cloud.Listener) (cloud.LoadBalancer, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return cloud.LoadBalancer{}, err
	}
	defer end()
	lb, err := p.cloud.SetListeners(ctx, name, ls)
	return lb, wrap(err, "updating listeners of load balancer %s", name)
}

// serviceListeners maps each Service port to its NodePort: instance mode,
// where the load balancer sends traffic to every node's NodePort.
func serviceListeners(service *v1.Service) ([]cloud.Listener, error) {
	if len(service.Spec.Ports) == 0 {
		return nil, fmt.Errorf("service %s/%s has no ports", service.Namespace, service.Name)
	}
	out := make([]cloud.Listener, 0, len(service.Spec.Ports))
	for _, sp := range service.Spec.Ports {
		proto := cmp.Or(string(sp.Protocol), string(v1.ProtocolTCP))
		if proto != string(v1.ProtocolTCP) && proto != string(v1.ProtocolUDP) {
			return nil, fmt.Errorf("service %s/%s port %d: protocol %s is not supported by this load balancer (TCP and UDP are)", service.Namespace, service.Name, sp.Port, proto)
		}
		if sp.NodePort == 0 {
			return nil, fmt.Errorf("service %s/%s port %d has no NodePort; an instance-mode load balancer needs one (is allocateLoadBalancerNodePorts false?)", service.Namespace, service.Name, sp.Port)
		}
		out = append(out, cloud.Listener{Protocol: proto, Port: sp.Port, TargetPort: sp.NodePort})
	}
	return out, nil
}

func listenersEqual(have, want []cloud.Listener) bool {
	return slices.EqualFunc(have, want, func(a, b cloud.Listener) bool {
		return strings.EqualFold(cmp.Or(a.Protocol, "TCP"), cmp.Or(b.Protocol, "TCP")) && a.Port == b.Port && a.TargetPort == b.TargetPort
	})
}

type targetKey struct {
	id   string
	port int32
}

// syncTargets registers every node's instance on every NodePort and
// deregisters whatever else is registered (old nodes, old NodePorts).
func (p *Provider) syncTargets(ctx context.Context, lb cloud.LoadBalancer, service *v1.Service, nodes []*v1.Node) error {
	ids, err := p.nodeInstanceIDs(ctx, nodes)
	if err != nil {
		return err
	}
	want := map[targetKey]bool{}
	for _, id := range ids {
		for _, sp := range service.Spec.Ports {
			if sp.NodePort != 0 {
				want[targetKey{id, sp.NodePort}] = true
			}
		}
	}
	have := map[targetKey]bool{}
	var stale []cloud.Target
	for _, t := range lb.Targets {
		k := targetKey{t.ID, t.Port}
		have[k] = true
		if !want[k] {
			stale = append(stale, cloud.Target{ID: t.ID, Port: t.Port})
		}
	}
	var missing []cloud.Target
	for k := range want {
		if !have[k] {
			missing = append(missing, cloud.Target{ID: k.id, Port: k.port})
		}
	}
	slices.SortFunc(missing, func(a, b cloud.Target) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Port, b.Port)) })
	if len(missing) > 0 {
		if err := p.targets(ctx, lb.Name, missing, true); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		if err := p.targets(ctx, lb.Name, stale, false); err != nil {
			return err
		}
	}
	return nil
}

func (p *Provider) targets(ctx context.Context, name string, ts []cloud.Target, register bool) error {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	if register {
		return wrap(p.cloud.RegisterTargets(ctx, name, ts), "registering %d target(s) with load balancer %s", len(ts), name)
	}
	return wrap(p.cloud.DeregisterTargets(ctx, name, ts), "deregistering %d target(s) from load balancer %s", len(ts), name)
}

// nodeInstanceIDs resolves nodes to live instance IDs with one
// DescribeInstances call filtered by the nodes' names (their private DNS
// names). A node with a providerID uses the ID in it; only when such an ID
// is not among the instances found by name (a node not named after its
// instance) is a second, unfiltered call made. Nodes whose instance is gone
// or terminated are left out: registering them would fail the whole call,
// and the node-lifecycle controller is about to delete them anyway. Nodes
// without a providerID (not initialized yet) are left out too, as
// cloud-provider-aws does (mapToAWSInstanceIDsTolerant): upstream's Service
// controller hands them over, since its node predicates check neither
// Ready nor initialization.
func (p *Provider) nodeInstanceIDs(ctx context.Context, nodes []*v1.Node) ([]string, error) {
	nodes = slices.DeleteFunc(slices.Clone(nodes), func(n *v1.Node) bool { return n.Spec.ProviderID == "" })
	if len(nodes) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	insts, err := p.describeInstances(ctx, cloud.DescribeInstancesInput{PrivateDNSNames: names}, len(nodes))
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	live := map[string]bool{}
	index := func(insts []cloud.Instance) {
		for _, inst := range insts {
			if inst.State != cloud.InstanceTerminated {
				byName[inst.PrivateDNSName] = inst.ID
				live[inst.ID] = true
			}
		}
	}
	index(insts)
	wanted := make([]string, len(nodes)) // instance ID from the providerID
	unresolved := false
	for i, n := range nodes {
		if n.Spec.ProviderID == "" {
			continue
		}
		if ref, err := p.profile.ParseProviderID(n.Spec.ProviderID); err == nil && ref.InstanceID != "" {
			wanted[i] = ref.InstanceID
			unresolved = unresolved || (!live[ref.InstanceID] && byName[n.Name] == "")
		}
	}
	if unresolved {
		all, err := p.describeInstances(ctx, cloud.DescribeInstancesInput{}, len(nodes))
		if err != nil {
			return nil, err
		}
		index(all)
	}
	seen := map[string]bool{}
	var ids []string
	for i, n := range nodes {
		id := wanted[i]
		if !live[id] {
			id = byName[n.Name]
		}
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (p *Provider) describeInstances(ctx context.Context, in cloud.DescribeInstancesInput, nodes int) ([]cloud.Instance, error) {
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	insts, err := p.cloud.DescribeInstances(ctx, in)
	return insts, wrap(err, "describing the instances of %d node(s)", nodes)
}

// healthCheckFor is HTTP on healthCheckNodePort for externalTrafficPolicy
// Local (only nodes with a ready Pod answer 200), otherwise TCP on the first
// NodePort (any node can forward).
func healthCheckFor(service *v1.Service) cloud.HealthCheck {
	if service.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && service.Spec.HealthCheckNodePort != 0 {
		return cloud.HealthCheck{Protocol: "HTTP", Port: service.Spec.HealthCheckNodePort, Path: localHealthCheckPath}
	}
	var port int32
	for _, sp := range service.Spec.Ports {
		if sp.NodePort != 0 {
			port = sp.NodePort
			break
		}
	}
	return cloud.HealthCheck{Protocol: "TCP", Port: port}
}

func (p *Provider) ensureHealthCheck(ctx context.Context, lb cloud.LoadBalancer, service *v1.Service) error {
	want := healthCheckFor(service)
	if want.Port == 0 {
		return nil
	}
	if have := lb.HealthCheck; have != nil && strings.EqualFold(have.Protocol, want.Protocol) && have.Port == want.Port && (want.Path == "" || have.Path == want.Path) {
		return nil
	}
	ctx, end, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	return wrap(p.cloud.ConfigureHealthCheck(ctx, lb.Name, want), "configuring the health check of load balancer %s", lb.Name)
}

// lbStatus is what goes into status.loadBalancer: the DNS name (AWS style)
// or, when the cloud hands out IPs, the IP in VIP mode.
func lbStatus(lb cloud.LoadBalancer) *v1.LoadBalancerStatus {
	if lb.IP != "" {
		vip := v1.LoadBalancerIPModeVIP
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: lb.IP, IPMode: &vip}}}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: lb.DNSName}}}
}
