package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/mythex/mythex/internal/atomicfile"
)

// File names in a CA directory made by InitCA.
const (
	// CACertFile is the fleet CA's certificate (PEM), given to agents as
	// --client-ca and to deployers as the CA that signs agents.
	CACertFile = "ca.crt"
	// CAKeyFile is the fleet CA's private key (PEM, mode 0600). Keep it off
	// the hosts.
	CAKeyFile = "ca.key"
)

// ErrExists is matched by InitCA and Issue when a file they would write
// exists: they never overwrite a key.
var ErrExists = errors.New("file exists; remove it first to replace it")

// Usage says what a certificate is for.
type Usage int

// Certificate usages.
const (
	// ServerCert is an agent's (or LB admin API's) certificate: TLS server
	// auth, with the host names and IPs it answers on.
	ServerCert Usage = iota
	// ClientCert is a deployer's certificate: TLS client auth.
	ClientCert
)

// InitCA makes a fleet CA in dir: an ECDSA P-256 key and a self-signed CA
// certificate valid for validity, named name. Files are written atomically;
// the key with mode 0600. Errors: ErrExists when either file exists.
func InitCA(dir, name string, validity time.Duration, now time.Time) error {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := refuseExisting(certPath, keyPath); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"mythex fleet"}},
		NotBefore:             now.Add(-5 * time.Minute), // tolerate a little skew between machines
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("make the CA certificate: %w", err)
	}
	return writePair(certPath, keyPath, der, key)
}

// Issue signs a certificate for name with the CA in caDir and writes
// outDir/name.crt and outDir/name.key (0600). A ServerCert carries hosts as
// DNS names or IP addresses (at least one); a ClientCert carries name as its
// common name. Errors: ErrExists; a missing or unreadable CA.
func Issue(caDir, outDir, name string, usage Usage, hosts []string, validity time.Duration, now time.Time) (certPath string, err error) {
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return "", fmt.Errorf("certificate name %q: use a plain name like web-1 or deployer", name)
	}
	if usage == ServerCert && len(hosts) == 0 {
		return "", errors.New("a server certificate needs at least one host name or IP address (--host)")
	}
	caCert, caKey, err := loadCA(caDir)
	if err != nil {
		return "", err
	}
	certPath, keyPath := filepath.Join(outDir, name+".crt"), filepath.Join(outDir, name+".key")
	if err := refuseExisting(certPath, keyPath); err != nil {
		return "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"mythex fleet"}},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch usage {
	case ServerCert:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case ClientCert:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if tmpl.NotAfter.After(caCert.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", fmt.Errorf("sign %s: %w", name, err)
	}
	return certPath, writePair(certPath, keyPath, der, key)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, nil, fmt.Errorf("read the fleet CA (make one with mythex certs init): %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("read the fleet CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s: not a PEM certificate and key", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CACertFile, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CAKeyFile, err)
	}
	return cert, key, nil
}

func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s: %w", p, ErrExists)
		}
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
