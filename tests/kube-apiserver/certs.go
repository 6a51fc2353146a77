package main

import (
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

// pki is what the API server and its clients need to trust and authenticate each other: one CA
// signs the serving certificate and the admin's client certificate; the service account key signs
// tokens the API server issues.
type pki struct {
	caCert     []byte // PEM
	serverCert []byte
	serverKey  []byte
	clientCert []byte
	clientKey  []byte
	// A client certificate from a CA the server does not trust, for tests of refusal.
	foreignCert []byte
	foreignKey  []byte
	saKey       []byte // PEM, PKCS#8 private key
	saPub       []byte // PEM, PKIX public key
	token       string
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newPKI() (*pki, error) {
	now := time.Now()
	ca, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "informer-tests-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("issuing the CA certificate: %w", err)
	}
	server, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}, ca)
	if err != nil {
		return nil, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	// system:masters passes every authorization check, as kubeadm's admin.conf does.
	client, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "informer-tests-admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
	if err != nil {
		return nil, fmt.Errorf("issuing the client certificate: %w", err)
	}
	otherCA, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "informer-tests-untrusted-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("issuing the untrusted CA certificate: %w", err)
	}
	foreign, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "informer-tests-admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, otherCA)
	if err != nil {
		return nil, fmt.Errorf("issuing the untrusted client certificate: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service account key: %w", err)
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	tokenBytes := make([]byte, 24)
	if _, err := rand.Read(tokenBytes); err != nil {
		return nil, err
	}
	p := &pki{
		caCert:      pemBlock("CERTIFICATE", ca.der),
		serverCert:  pemBlock("CERTIFICATE", server.der),
		clientCert:  pemBlock("CERTIFICATE", client.der),
		foreignCert: pemBlock("CERTIFICATE", foreign.der),
		saKey:       pemBlock("PRIVATE KEY", saKeyDER),
		saPub:       pemBlock("PUBLIC KEY", saPubDER),
		token:       fmt.Sprintf("%x", tokenBytes),
	}
	if p.serverKey, err = keyPEM(server.key); err != nil {
		return nil, err
	}
	if p.clientKey, err = keyPEM(client.key); err != nil {
		return nil, err
	}
	if p.foreignKey, err = keyPEM(foreign.key); err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs template with parent's key, or self-signs it when parent is nil.
func issue(template *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	signerCert, signerKey := template, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, der: der}, nil
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

// write puts the files the API server reads into dir and returns their paths by flag name.
func (p *pki) write(dir string) (map[string]string, error) {
	files := map[string][]byte{
		"ca.crt":             p.caCert,
		"server.crt":         p.serverCert,
		"server.key":         p.serverKey,
		"sa.key":             p.saKey,
		"sa.pub":             p.saPub,
		"foreign-client.crt": p.foreignCert,
		"foreign-client.key": p.foreignKey,
		// token,user,uid,"group1,group2"
		"tokens.csv": []byte(fmt.Sprintf("%s,informer-tests-token-admin,informer-tests-token-admin,\"system:masters\"\n", p.token)),
	}
	paths := map[string]string{}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		paths[name] = path
	}
	return paths, nil
}
