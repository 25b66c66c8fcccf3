package controlplane

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"
	cliflag "k8s.io/component-base/cli/flag"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// parseFlags applies command-line style flags to a component's option
// structs. Going through the components' own flag definitions keeps the lab's
// configuration in the vocabulary of the Kubernetes documentation.
func parseFlags(component string, sets cliflag.NamedFlagSets, args []string) error {
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	for _, f := range sets.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s flags: %w", component, err)
	}
	return nil
}

func (cp *ControlPlane) apiserverArgs(etcdURL string) []string {
	return append([]string{
		"--etcd-servers=" + etcdURL,
		"--advertise-address=127.0.0.1",
		// The lab has no other apiserver replica to reconcile endpoints with.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + cp.cfg.ServiceCIDR,
		"--client-ca-file=" + cp.pki.CACert(),
		"--token-auth-file=" + cp.pki.ComponentTokens(),
		"--tls-cert-file=" + cp.pki.ServingCert(),
		"--tls-private-key-file=" + cp.pki.ServingKey(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + cp.pki.ServiceAccountKey(),
		"--service-account-signing-key-file=" + cp.pki.ServiceAccountKey(),
		"--authorization-mode=" + kubeadmAuthorization,
		"--enable-admission-plugins=" + kubeadmAdmission,
		// kubeadm's (manifests.go:198, :200): bootstrap tokens authenticate
		// (the bootstrapsigner and tokencleaner controllers serve them) and
		// a privileged container is allowed, as Pod Security's default
		// privileged level allows it.
		"--enable-bootstrap-token-auth=true",
		"--allow-privileged=true",
		// The lab serves Go's profiles itself (--pprof, off by default);
		// the apiserver's /debug/pprof would be a second, always-on door.
		"--profiling=false",
		// The default (Hostname,InternalDNS,InternalIP,...) makes the
		// apiserver reach a kubelet (logs, exec, nodes/<n>/proxy) by its
		// Hostname address, a name the host's DNS resolver is asked about;
		// the lab never sends a packet off loopback, so only IPs are used.
		"--kubelet-preferred-address-types=" + kubeletAddressTypes,
	}, cp.egressArgs()...)
}

// kubeletAddressTypes are the Node address types the apiserver dials a
// kubelet by: IPs only, never a DNS name.
const kubeletAddressTypes = "InternalIP,ExternalIP"

// runAPIServer builds kube-apiserver on an already-bound loopback listener
// and runs it until ctx ends. ready is closed by the caller's readiness poll.
func (cp *ControlPlane) runAPIServer(ctx context.Context, ln net.Listener, etcdURL string) (func() error, error) {
	return cp.runAPIServerWith(ctx, ln, cp.apiserverArgs(etcdURL), "kube-apiserver")
}

// runAPIServerWith is runAPIServer with the flags given (the management
// apiserver's, infra.go).
// informer is the name its informers register under: client-go refuses a
// name twice in one process.
func (cp *ControlPlane) runAPIServerWith(ctx context.Context, ln net.Listener, args []string, informer string) (func() error, error) {
	s := apiserveroptions.NewServerRunOptions()
	if err := parseFlags("kube-apiserver", s.Flags(), args); err != nil {
		return nil, err
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	name, err := cache.NewInformerName(informer)
	if err != nil {
		return nil, err
	}
	completed.InformerName = name
	return func() error { return runAPIServerChain(ctx, completed) }, nil
}

func (cp *ControlPlane) controllerManagerArgs() []string {
	return []string{
		"--kubeconfig=" + cp.clientKubeconfig(binaryControllerManager),
		// The chapter's point: with "external" the controller-manager runs no
		// cloud loops at all; they belong to the cloud-controller-manager.
		"--cloud-provider=external",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + cp.cfg.ClusterCIDR,
		"--node-cidr-mask-size=" + strconv.Itoa(cp.cfg.NodeCIDRMaskSize),
		"--service-cluster-ip-range=" + cp.cfg.ServiceCIDR,
		"--node-monitor-grace-period=" + cp.cfg.NodeMonitorGracePeriod.String(),
		"--service-account-private-key-file=" + cp.pki.ServiceAccountKey(),
		"--root-ca-file=" + cp.pki.CACert(),
		// kubeadm signs CSRs with the cluster CA (manifests.go:359-360) and
		// gives each controller its own ServiceAccount (manifests.go:361),
		// whose RBAC role and user agent it then acts under.
		"--cluster-signing-cert-file=" + cp.pki.CACert(),
		"--cluster-signing-key-file=" + cp.pki.CAKey(),
		"--use-service-account-credentials=true",
		"--leader-elect=" + leaderElect,
		"--secure-port=0",
		"--profiling=false",
		// Upstream's 20/30 would take minutes to hand 1,000 nodes their
		// podCIDRs; the lab's apiserver is in the same process.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--controllers=" + kubeadmControllers,
	}
}

func (cp *ControlPlane) runControllerManager(ctx context.Context) (func() error, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	known, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	sets := s.Flags(known, disabled, aliases)
	s.ParsedFlags = &sets
	if err := parseFlags("kube-controller-manager", sets, cp.controllerManagerArgs()); err != nil {
		return nil, err
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	c, err := s.Config(ctx, known, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	completed := c.Complete()
	return func() error { return kcmapp.Run(ctx, completed) }, nil
}

func (cp *ControlPlane) schedulerArgs() []string {
	return []string{
		"--kubeconfig=" + cp.clientKubeconfig(binaryScheduler),
		"--leader-elect=" + leaderElect,
		"--secure-port=0",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}

func (cp *ControlPlane) runScheduler(ctx context.Context) (func() error, error) {
	opts := scheduleroptions.NewOptions()
	if err := parseFlags("kube-scheduler", *opts.Flags, cp.schedulerArgs()); err != nil {
		return nil, err
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler setup: %w", err)
	}
	return func() error {
		err := schedulerapp.Run(ctx, cc, sched)
		// Without leader election the scheduler reports its normal end as
		// an error; a cancelled context is how the lab stops it.
		if ctx.Err() != nil {
			return nil
		}
		return err
	}, nil
}
