package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The management side of the kubevirt profile (Config.Infra). The chapter's
// hands-on cluster is a tenant cluster whose VMs are KubeVirt
// VirtualMachineInstances in a management ("infra") cluster, where its
// kubevirt-cloud-controller-manager runs too; the tenant's kubeconfig
// shows none of that. The lab gives the management side an apiserver of
// its own: a second kube-apiserver from the same code and flags, on its
// own loopback port, storing under its own etcd prefix in the one embedded
// etcd. A second prefix is the cheapest clean split: the two apiservers
// share no key (every resource, Events and Leases included, lives under
// --etcd-prefix), while a second etcd would cost another bolt database,
// WAL and raft loop for a handful of objects. docs/architecture.md
// ("The management side") has its memory cost.

// infraEtcdPrefix is the management apiserver's --etcd-prefix (the
// tenant's is upstream's default, /registry).
const infraEtcdPrefix = "/infra-registry"

// InfraKubeconfigName is the management side's admin kubeconfig in the
// data dir: `ccmlab kubectl --infra` and `kubectl --kubeconfig
// <data-dir>/infra-kubeconfig` use it.
const InfraKubeconfigName = "infra-kubeconfig"

// Infra is the management side's apiserver.
type Infra struct {
	server     string
	restConfig *rest.Config
	path       string
	// HeapBytes is what starting it added to the process's live heap
	// (after a GC each side), for docs/architecture.md's figure.
	HeapBytes int64
}

// Server is the management apiserver's URL.
func (i *Infra) Server() string { return i.server }

// RestConfig returns a copy of the lab's own client configuration for the
// management apiserver (the components' token, as for the tenant's).
func (i *Infra) RestConfig() *rest.Config { return rest.CopyConfig(i.restConfig) }

// KubeconfigPath is <data-dir>/infra-kubeconfig.
func (i *Infra) KubeconfigPath() string { return i.path }

// Infra returns the management side, or nil when Config.Infra was off.
func (cp *ControlPlane) Infra() *Infra { return cp.infra }

// startInfra runs the management apiserver: the tenant apiserver's flags
// with another etcd prefix and Service range, on a listener of its own.
func (cp *ControlPlane) startInfra(ctx context.Context, etcdURL string) error {
	before := liveHeap()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("binding the management apiserver's port: %w", err)
	}
	in := &Infra{server: "https://" + ln.Addr().String(), path: filepath.Join(cp.cfg.DataDir, InfraKubeconfigName)}
	ca, err := os.ReadFile(cp.pki.CACert())
	if err != nil {
		ln.Close()
		return err
	}
	cert, err := os.ReadFile(cp.pki.AdminCert())
	if err != nil {
		ln.Close()
		return err
	}
	key, err := os.ReadFile(cp.pki.AdminKey())
	if err != nil {
		ln.Close()
		return err
	}
	if err := cp.writeInfraKubeconfig(in, ca, cert, key); err != nil {
		ln.Close()
		return err
	}
	in.restConfig = rest.CopyConfig(cp.restConfig)
	in.restConfig.Host = in.server
	args := infraArgs(cp.apiserverArgs(etcdURL), cp.cfg.InfraServiceCIDR)
	if err := cp.launch(ctx, "kube-apiserver (management)", func(c context.Context) (func() error, error) {
		return cp.runAPIServerWith(c, ln, args, "kube-apiserver-management")
	}); err != nil {
		ln.Close()
		return err
	}
	if err := waitReady(ctx, in.restConfig, cp.components[len(cp.components)-1]); err != nil {
		return fmt.Errorf("management apiserver: %w", err)
	}
	in.HeapBytes = liveHeap() - before
	cp.infra = in
	return nil
}

// infraArgs are the tenant apiserver's flags with the management side's
// etcd prefix and Service range.
func infraArgs(tenant []string, serviceCIDR string) []string {
	args := slices.DeleteFunc(slices.Clone(tenant), func(a string) bool {
		return strings.HasPrefix(a, "--service-cluster-ip-range=") || strings.HasPrefix(a, "--etcd-prefix=")
	})
	return append(args, "--etcd-prefix="+infraEtcdPrefix, "--service-cluster-ip-range="+serviceCIDR)
}

func (cp *ControlPlane) writeInfraKubeconfig(in *Infra, ca, cert, key []byte) error {
	return cp.writeKubeconfigFileNamed(in.path, "ccmlab-infra", in.server, ca, "ccmlab-infra-admin", cert, key)
}

// waitReady polls /readyz of the apiserver c reaches until it answers,
// the component exits or two minutes pass.
func waitReady(ctx context.Context, c *rest.Config, comp *component) error {
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-comp.done:
			return false, fmt.Errorf("%s exited: %w", comp.name, comp.err)
		default:
		}
		if _, err := client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw(); err != nil {
			last = err
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("not ready: %w (last answer: %v)", err, last)
	}
	return err
}

// liveHeap is the live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
