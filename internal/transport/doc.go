// Package transport is how mythex reaches a host agent (or the embedded load
// balancer's admin API) on another machine without putting its bearer token
// on the wire in the clear: through an SSH connection to the host, whose
// "direct-tcpip" channels reach the agent's loopback listener (as Kamal
// reaches its hosts), or over TLS 1.3 with client certificates. The token is
// still required on every transport.
//
// Host keys are verified against known_hosts (OpenSSH's format); an unknown
// or changed key is refused with its fingerprint, never accepted on first
// use. Keys come from ssh-agent ($SSH_AUTH_SOCK) and the user's identity
// files. Certificates for a small fleet come from Init and Issue (a fleet CA
// made with crypto/x509, for teams that have none).
package transport
