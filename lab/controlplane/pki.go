package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// pki is the lab's certificate authority and the few credentials signed by
// it. It is generated on first start and reused afterwards, so a kubeconfig
// handed to a student keeps working across restarts.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p pki) CACert() string            { return p.path("ca.crt") }
func (p pki) CAKey() string             { return p.path("ca.key") }
func (p pki) ServingCert() string       { return p.path("apiserver.crt") }
func (p pki) ServingKey() string        { return p.path("apiserver.key") }
func (p pki) AdminCert() string         { return p.path("admin.crt") }
func (p pki) AdminKey() string          { return p.path("admin.key") }
func (p pki) ServiceAccountKey() string { return p.path("sa.key") }

// ServiceAccountKey signs ServiceAccount tokens (apiserver and the
// controller-manager's token controller); the apiserver reads the public half
// from the same file.

// ensure creates whatever is missing. Existing files are never overwritten.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caCert, caKey, err := p.ensureCA()
	if err != nil {
		return err
	}
	// The serving certificate names loopback only: the apiserver never
	// listens anywhere else.
	if err := p.ensureLeaf(p.ServingCert(), p.ServingKey(), caCert, caKey, x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return err
	}
	// system:masters is what kubeadm's admin.conf carries too: the student
	// is the cluster admin of their own lab.
	if err := p.ensureLeaf(p.AdminCert(), p.AdminKey(), caCert, caKey, x509.Certificate{
		Subject:     pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	return p.ensureServiceAccountKey()
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func writeKey(path string, key crypto.Signer) error {
	pemBytes, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	return keyutil.WriteKey(path, pemBytes)
}

func (p pki) ensureCA() (*x509.Certificate, crypto.Signer, error) {
	ok, err := exists(p.CACert())
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		key, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "ccmlab-ca"}, key)
		if err != nil {
			return nil, nil, err
		}
		if err := writeKey(p.CAKey(), key); err != nil {
			return nil, nil, err
		}
		if err := writeCert(p.CACert(), cert); err != nil {
			return nil, nil, err
		}
		return cert, key, nil
	}
	certs, err := certutil.CertsFromFile(p.CACert())
	if err != nil {
		return nil, nil, fmt.Errorf("reading lab CA: %w", err)
	}
	keyAny, err := keyutil.PrivateKeyFromFile(p.CAKey())
	if err != nil {
		return nil, nil, fmt.Errorf("reading lab CA key: %w", err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("lab CA key %s is not a signing key", p.CAKey())
	}
	return certs[0], key, nil
}

func (p pki) ensureLeaf(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, tmpl x509.Certificate) error {
	ok, err := exists(certPath)
	if err != nil || ok {
		return err
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = ca.NotBefore
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return writeCert(certPath, cert)
}

func writeCert(path string, cert *x509.Certificate) error {
	pemBytes, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	return certutil.WriteCert(path, pemBytes)
}

func (p pki) ensureServiceAccountKey() error {
	ok, err := exists(p.ServiceAccountKey())
	if err != nil || ok {
		return err
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	return writeKey(p.ServiceAccountKey(), key)
}

// ComponentTokens is the apiserver's --token-auth-file: one bearer token for
// the lab's own clients (controllers, scheduler, CCM, kubelets, server).
func (p pki) ComponentTokens() string { return p.path("components.csv") }

// newComponentToken writes a fresh token for this start. The lab's own
// clients present it instead of the admin client certificate because the
// apiserver verifies a certificate's chain on every request (an ECDSA
// signature check each time), while a token is a cached lookup: at a
// thousand nodes that check was 5% of the machine. The student's
// kubeconfig keeps the certificate, as kubeadm's admin.conf does.
func (p pki) newComponentToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := fmt.Sprintf("%x", b)
	line := token + `,ccmlab-components,ccmlab-components,"system:masters"` + "\n"
	if err := os.WriteFile(p.ComponentTokens(), []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", p.ComponentTokens(), err)
	}
	return token, nil
}
