package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes the two kubeconfigs of a start (the apiserver port
// changes on each start, so both are rewritten each time):
//
//   - the student's admin kubeconfig, self-contained (certificates
//     embedded) so that it can be copied anywhere and used with a stock
//     kubectl; it authenticates with the admin client certificate, as
//     kubeadm's admin.conf does;
//   - the lab's own components' kubeconfig, the same cluster with a bearer
//     token made for this start (pki.newComponentToken says why).
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
	if err := cp.writeKubeconfigFile(cp.KubeconfigPath(), cp.server, ca, "ccmlab-admin",
		&clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}); err != nil {
		return err
	}
	token, err := cp.pki.newComponentToken()
	if err != nil {
		return err
	}
	auth := &clientcmdapi.AuthInfo{Token: token}
	if err := cp.writeKubeconfigFile(cp.componentKubeconfig(), cp.server, ca, "ccmlab-components", auth); err != nil {
		return err
	}
	// The controller-manager and the scheduler reach the apiserver under a
	// path of their own, by which it names their clients (useragent.go).
	for _, b := range namedClients {
		if err := cp.writeKubeconfigFile(cp.clientKubeconfig(b), cp.server+clientPath(b), ca, "ccmlab-components", auth); err != nil {
			return err
		}
	}
	return nil
}

// clientKubeconfig is the kubeconfig of the embedded component binary.
func (cp *ControlPlane) clientKubeconfig(binary string) string {
	return cp.pki.path(binary + ".kubeconfig")
}

func (cp *ControlPlane) writeKubeconfigFile(path, server string, ca []byte, user string, auth *clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["ccmlab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["ccmlab"] = &clientcmdapi.Context{Cluster: "ccmlab", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "ccmlab"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

func (cp *ControlPlane) loadRestConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.componentKubeconfig())
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

// writeKubeconfigFileNamed is writeKubeconfigFile with a cluster and
// context name of its own (the management side's, so a merged kubeconfig
// keeps both) and a client certificate.
func (cp *ControlPlane) writeKubeconfigFileNamed(path, name, server string, ca []byte, user string, cert, key []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}
