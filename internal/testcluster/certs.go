package testcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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

// PKI is a certificate authority made at test time, with PEM files of a
// server certificate (for 127.0.0.1 and localhost) and a client
// certificate in Dir. Java's PEM keystores (ssl.keystore.type=PEM in
// Kafka, and ZooKeeper's X509Util) read these files as they are. A plain
// value, safe for concurrent reads.
type PKI struct {
	Dir string
	// CAFile is the CA certificate that signed the others.
	CAFile string
	// ServerCert and ServerKey: a certificate for 127.0.0.1 and localhost.
	ServerCert, ServerKey string
	// ServerPEM is ServerKey then ServerCert in one file (what Java's PEM
	// keystore reads as ssl.keystore.location).
	ServerPEM string
	// ClientCert and ClientKey: a client certificate (CN=zkgroup-client).
	ClientCert, ClientKey string
	// ClientPEM is ClientKey then ClientCert in one file.
	ClientPEM string

	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// NewPKI makes a new CA and its server and client certificates, valid
// for a day, as PEM files in dir. Keys are ECDSA P-256 in PKCS#8 (the
// form Java reads). Each call makes a CA of its own: certificates of two
// PKIs do not trust each other.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testcluster: pki: %w", err)
	}
	p := &PKI{Dir: dir}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testcluster: pki: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "zkgroup test CA " + filepath.Base(dir)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testcluster: pki: CA: %w", err)
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("testcluster: pki: CA: %w", err)
	}
	p.caKey = key
	p.CAFile = filepath.Join(dir, "ca.pem")
	if err := writePEM(p.CAFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if p.ServerCert, p.ServerKey, p.ServerPEM, err = p.Issue("server", "localhost", true); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, p.ClientPEM, err = p.Issue("client", "zkgroup-client", false); err != nil {
		return nil, err
	}
	return p, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// Issue signs a new certificate named cn with the CA and writes
// <name>.crt, <name>.key and <name>.pem (key then certificate) into Dir.
// A server certificate is valid for 127.0.0.1, ::1 and localhost; every
// certificate may authenticate both ends.
func (p *PKI) Issue(name, cn string, server bool) (certFile, keyFile, bundle string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("testcluster: pki: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", "", fmt.Errorf("testcluster: pki: %s: %w", name, err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", fmt.Errorf("testcluster: pki: %s: %w", name, err)
	}
	certFile = filepath.Join(p.Dir, name+".crt")
	keyFile = filepath.Join(p.Dir, name+".key")
	bundle = filepath.Join(p.Dir, name+".pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, certPEM}, {keyFile, keyPEM}, {bundle, append(append([]byte(nil), keyPEM...), certPEM...)}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return "", "", "", fmt.Errorf("testcluster: pki: %w", err)
		}
	}
	return certFile, keyFile, bundle, nil
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("testcluster: pki: %w", err)
	}
	return nil
}

// ClientTLS returns a Go TLS config that trusts the CA and, with withCert,
// presents the client certificate.
func (p *PKI) ClientTLS(withCert bool) (*tls.Config, error) {
	ca, err := os.ReadFile(p.CAFile)
	if err != nil {
		return nil, fmt.Errorf("testcluster: pki: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		kp, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("testcluster: pki: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}
