package main

import (
	"io"

	"github.com/mythex/mythex/internal/agentconn"
)

// newAgentPool is how every command reaches the fleet's agents: over SSH
// (hosts[].ssh; ~/.ssh/known_hosts, ssh-agent and ~/.ssh/id_*), TLS
// (agent_tls), loopback, or plain HTTP with --insecure-plaintext (warned on
// errOut).
func newAgentPool(insecurePlaintext bool, errOut io.Writer) *agentconn.Pool {
	return agentconn.NewPool(agentconn.Options{InsecurePlaintext: insecurePlaintext, Warn: errOut})
}
