package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ccmlab/ccmlab/lab/controlplane"
)

// cluster is the Kubernetes the lab runs against: the embedded control
// plane by default, or an existing cluster with --kubeconfig.
type cluster interface {
	Client() (kubernetes.Interface, error)
	RestConfig() *rest.Config
	// ClusterCIDR is the Pod network nodes' podCIDRs are cut from; the
	// Route controller owns routes inside it.
	ClusterCIDR() string
	// KubeconfigPath is <data-dir>/kubeconfig, which `ccmlab kubectl` and
	// the page's console use.
	KubeconfigPath() string
	Stop() error
}

var (
	_ cluster = (*controlplane.ControlPlane)(nil)
	_ cluster = (*attachedCluster)(nil)
)

// DefaultAttachedClusterCIDR is kind's default Pod network, the cluster a
// student is most likely to attach to.
const DefaultAttachedClusterCIDR = "10.244.0.0/16"

// attachedCluster is an existing cluster reached through a kubeconfig. The
// lab adds its simulated nodes to it and runs the CCM against it; the
// cluster should allocate node CIDRs and run no other CCM.
type attachedCluster struct {
	raw         clientcmdapi.Config // flattened: certificates inline
	restConfig  *rest.Config
	clusterCIDR string
	path        string
}

// attach loads kubeconfig and checks that its cluster answers. It writes
// nothing, so a bad --kubeconfig leaves the data dir as it was.
func attach(ctx context.Context, kubeconfig, clusterCIDR string) (*attachedCluster, error) {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	// Relative certificate paths are relative to the file; inline them so
	// the copy in the data dir works from anywhere.
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	restConfig, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	probe := rest.CopyConfig(restConfig)
	probe.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: cannot reach the cluster at %s: %w", kubeconfig, restConfig.Host, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &attachedCluster{raw: *raw, restConfig: restConfig, clusterCIDR: clusterCIDR}, nil
}

// writeKubeconfig puts the flattened kubeconfig at <dataDir>/kubeconfig.
func (a *attachedCluster) writeKubeconfig(dataDir string) error {
	a.path = filepath.Join(dataDir, "kubeconfig")
	if err := clientcmd.WriteToFile(a.raw, a.path); err != nil {
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	return os.Chmod(a.path, 0o600)
}

func (a *attachedCluster) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(a.RestConfig())
}

func (a *attachedCluster) RestConfig() *rest.Config { return rest.CopyConfig(a.restConfig) }
func (a *attachedCluster) ClusterCIDR() string      { return a.clusterCIDR }
func (a *attachedCluster) KubeconfigPath() string   { return a.path }

// Stop leaves the cluster running: it is not the lab's. The lab's Nodes
// stay registered (NotReady) so a restart with the same data dir finds
// them, as with the embedded control plane.
func (a *attachedCluster) Stop() error { return nil }
