// Package probe measures a deploy from a user's side: it sends HTTP requests to
// one URL at a constant rate on a fixed, open-loop schedule (request i is due at
// start + i/rate, whether or not earlier requests have answered), classifies
// every request by what it tells about the target (Classify), and aggregates
// the results into per-second buckets and latency histograms whose size does
// not grow with the number of requests.
//
// Use it while something else runs (a deploy, a test):
//
//	p, err := probe.New(probe.Config{URL: u, Rate: 500}, probe.Deps{})
//	if err != nil { ... }
//	p.Start(ctx)
//	... run the deploy ...
//	report := p.Stop()
//	if report.ReachedNothing > 0 { ... }
//
// What a user feels during a deploy is a request that reached nothing (the
// 502s); a 503 from a draining target's health endpoint is the drain working
// and is counted apart (ClassDrainSignal). The prober's own failures (fd
// exhaustion, a name that does not resolve) are probe errors, never counted as
// requests the target dropped. mythex measure is the command-line face.
//
// Requests go out over HTTP/1.1 keep-alive connections through one
// fasthttp.HostClient (fasthttp.go), each worker reusing its own request and
// response, so a request costs no allocation (net/http's path made about 50
// per request; at 5,000 req/s the prober's user CPU fell by about 30 % and
// its late sends by half). A request once
// written is never retried: a reused connection that dies under it is counted
// (ReasonReusedConnDied), as an ALB would answer 502. A connection the peer
// closed while idle in the pool is skipped before anything is written, as
// net/http and an ALB skip it. A wrapper on every connection (conn.go) tells
// Classify what fasthttp's errors leave out: whether the connection was
// reused, whether any response byte arrived, and the socket's own error (a
// reset, not just "closed").
package probe
