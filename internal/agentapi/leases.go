package agentapi

import "context"

// HostLeases is one host's leases as `mythex lease status` shows them (its
// --json shape); Error says why the host's agent could not be asked.
type HostLeases struct {
	Host       string         `json:"host"`
	Agent      string         `json:"agent"`
	Lease      *Lease         `json:"lease,omitempty"`
	FleetLease *Lease         `json:"fleet_lease,omitempty"`
	Restore    *RestoreStatus `json:"restore,omitempty"`
	Recovery   *Recovery      `json:"recovery,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// AskLeases asks the agent c of host for its leases, restore and recovery
// state; an agent that does not answer is a row with Error, so one host's
// silence does not hide the others.
func AskLeases(ctx context.Context, c *Client, host string) HostLeases {
	row := HostLeases{Host: host, Agent: c.Base()}
	st, err := c.Status(ctx)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Lease, row.FleetLease, row.Restore, row.Recovery = st.Lease, st.FleetLease, st.Restore, st.Recovery
	return row
}
