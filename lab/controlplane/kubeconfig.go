package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a self-contained admin kubeconfig (certificates
// embedded) so that it can be copied anywhere and used with a stock kubectl.
// The apiserver port changes on each start, so the file is rewritten each
// time.
func (cp *ControlPlane) writeKubeconfig() error {
	ca, err := os.ReadFile(cp.pki.CACert())
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(cp.pki.AdminCert())
	if err != nil {
		return err
	}
	key, err := os.ReadFile(cp.pki.AdminKey())
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["ccmlab"] = &clientcmdapi.Cluster{Server: cp.server, CertificateAuthorityData: ca}
	cfg.AuthInfos["ccmlab-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["ccmlab"] = &clientcmdapi.Context{Cluster: "ccmlab", AuthInfo: "ccmlab-admin", Namespace: "default"}
	cfg.CurrentContext = "ccmlab"
	if err := clientcmd.WriteToFile(*cfg, cp.KubeconfigPath()); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return os.Chmod(cp.KubeconfigPath(), 0o600)
}

func (cp *ControlPlane) loadRestConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath())
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	// The lab's own clients are many (controllers, kubelets, the server);
	// client-go's default 5 QPS would make the lab look slower than the
	// controllers really are.
	cfg.QPS = 200
	cfg.Burst = 400
	return cfg, nil
}
