package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files the API server reads and the admin credentials written to the kubeconfig.
type pki struct {
	caCert                  []byte // PEM
	adminCert, adminKey     []byte // PEM
	servingCert, servingKey string // paths
	caFile                  string
	saPublic, saPrivate     string
	// kubeletClientCert and kubeletClientKey (paths) are what the API server presents to kubelets
	// for logs, exec and port-forward; a real kubelet trusts caFile for client certificates.
	kubeletClientCert, kubeletClientKey string

	// The CA stays in memory so that clients added later (a real node's kubelet) get certificates
	// the API server trusts; it is never written to disk.
	ca    *x509.Certificate
	caKey crypto.Signer
}

// certValidity covers a demo left running over a long weekend; the files are recreated at each start.
const certValidity = 30 * 24 * time.Hour

// newPKI creates, in dir, a CA that signs both the API server's serving certificate and the admin's
// client certificate, and the key pair that signs service-account tokens.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := template("localcluster-ca")
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	serving := template("kube-apiserver")
	serving.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	serving.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(KubernetesServiceIP)}
	serving.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	servingCert, servingKey, err := issue(serving, ca, caKey)
	if err != nil {
		return nil, err
	}

	admin := template("admin")
	admin.Subject.Organization = []string{"system:masters"}
	admin.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	adminCert, adminKey, err := issue(admin, ca, caKey)
	if err != nil {
		return nil, err
	}

	// The API server's identity towards kubelets: system:masters, so that a kubelet authorizing
	// through the API server (webhook mode) lets it read logs and exec.
	kubeletClient := template("kube-apiserver-kubelet-client")
	kubeletClient.Subject.Organization = []string{"system:masters"}
	kubeletClient.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	kubeletClientCert, kubeletClientKey, err := issue(kubeletClient, ca, caKey)
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPrivate, err := keyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPublicDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}

	p := &pki{
		caCert:      pemBlock("CERTIFICATE", caDER),
		adminCert:   adminCert,
		adminKey:    adminKey,
		caFile:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saPublic:    filepath.Join(dir, "sa.pub"),
		saPrivate:   filepath.Join(dir, "sa.key"),

		kubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
		ca:                ca,
		caKey:             caKey,
	}
	for path, data := range map[string][]byte{
		p.caFile:            p.caCert,
		p.servingCert:       servingCert,
		p.servingKey:        servingKey,
		p.saPublic:          pemBlock("PUBLIC KEY", saPublicDER),
		p.saPrivate:         saPrivate,
		p.kubeletClientCert: kubeletClientCert,
		p.kubeletClientKey:  kubeletClientKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// issueClient issues a client certificate for user in groups (the subject's organizations, which
// the API server reads as group names).
func (p *pki) issueClient(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	tmpl := template(user)
	tmpl.Subject.Organization = groups
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return issue(tmpl, p.ca, p.caKey)
}

func template(commonName string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		// Clocks of the processes agree, but a minute of slack costs nothing.
		NotBefore: now.Add(-time.Minute),
		NotAfter:  now.Add(certValidity),
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}
}

func issue(tmpl, ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEMBytes []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to issue a certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	keyPEMBytes, err = keyPEM(key)
	return pemBlock("CERTIFICATE", der), keyPEMBytes, err
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
