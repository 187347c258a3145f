package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ServerTLS is the TLS configuration of an agent (or LB admin API) that
// requires client certificates: TLS 1.3 only, the server's certificate and
// key, and the CA whose certificates clients must present. Errors name the
// file that could not be read.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || clientCAFile == "" {
		return nil, errors.New("TLS needs all three of --tls-cert, --tls-key and --client-ca")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	pool, err := certPool(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// ClientTLS is the TLS configuration a deployer reaches agents with: TLS 1.3
// only, the CA that signed the agents, and the deployer's own certificate.
// serverName overrides the name checked against the agent's certificate
// (default: the host of the address dialled).
func ClientTLS(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("agent TLS needs ca_file, cert_file and key_file")
	}
	pool, err := certPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cert_file/key_file: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		RootCAs:      pool,
		Certificates: []tls.Certificate{cert},
		ServerName:   serverName,
	}, nil
}

func certPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}
