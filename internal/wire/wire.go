// Package wire holds the names mythex's parts agree on over HTTP: headers the
// load balancer, the sample app and the prober read and write.
package wire

const (
	// HeaderLB marks a response the mythex load balancer generated itself (no
	// target answered it). Its value is the reason, one of the Reason constants.
	// A client uses it to tell LB errors (requests that reached nothing) from
	// application errors, as ALB metrics separate HTTPCode_ELB_5XX from
	// HTTPCode_Target_5XX.
	HeaderLB = "X-Mythex-Lb"

	// HeaderVersion is the version of the service that answered (sample app).
	HeaderVersion = "X-Mythex-Version"
	// HeaderHost is the host name of the service that answered (sample app).
	HeaderHost = "X-Mythex-Host"
	// HeaderService is the name of the service that answered (sample app).
	HeaderService = "X-Mythex-Service"
)

// Reasons carried by HeaderLB.
const (
	// ReasonNoTargets: no target is registered (503).
	ReasonNoTargets = "no-targets"
	// ReasonTargetRefused: the target refused the connection (502).
	ReasonTargetRefused = "target-refused"
	// ReasonTargetReset: the target reset or closed the connection before a
	// complete response (502).
	ReasonTargetReset = "target-reset"
	// ReasonTargetTimeout: the target did not answer within the timeout (504).
	ReasonTargetTimeout = "target-timeout"
	// ReasonBadRequest: the client's request could not be proxied (400).
	ReasonBadRequest = "bad-request"
	// ReasonTargetBadResponse: the target's response was malformed or too
	// large to proxy (502).
	ReasonTargetBadResponse = "target-bad-response"
	// ReasonTargetDeregistered: the target was deregistered and its
	// deregistration delay ran out while the request was in flight; the load
	// balancer closed the connection (502).
	ReasonTargetDeregistered = "target-deregistered"
)
