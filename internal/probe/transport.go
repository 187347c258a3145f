package probe

import "time"

// transport is how the prober's workers reach the target. The default is
// fastTransport (fasthttp.go): one fasthttp.HostClient shared by all workers.
// Tests of the scheduler inject an in-memory one through Deps.
type transport interface {
	// newExchanger returns the exchanger of one worker. It holds the
	// worker's reusable request and response, so a worker sends without
	// allocating; it is used by that worker only.
	newExchanger() exchanger
	// dials returns how many connections have been opened so far.
	dials() int64
	// closeIdle closes the connections not in use.
	closeIdle()
}

// exchanger sends one request at a time.
type exchanger interface {
	// exchange sends the request, reads the response to its end within
	// timeout and returns what was observed; every failure is in
	// Observation.Err. Observation.HealthPath is left for the caller.
	exchange(timeout time.Duration) (Observation, exchanged)
}

// exchanged is what an exchange saw besides the Observation: the sample
// app's version and host headers, for the report's counts.
type exchanged struct {
	version, host string
}
