// Package watchdog is the host agent's self-healing loop: it brings back a
// service that crashed at three in the morning without anyone waking up, and
// it never fights a deploy (docs/watchdog.md).
//
// Every interval W (fleet watchdog.interval, default 60s) a round looks at
// each service of the host's current published definition: the runtime must
// report an instance of exactly the definition's spec running, and its
// health check (the runtime's, with Docker's rules) must not be unhealthy. A
// failed look is a strike; a service is healed only on its K-th consecutive
// strike (watchdog.failures_before_heal, default 4) — one failure is never
// enough, so a service a deploy drains on purpose never looks dead.
//
// What keeps it from fighting a deploy:
//
//   - The host lock. Each round first tries the host lock without blocking
//     (the same flock a deploy lease and `mythex agent bootstrap` hold); while
//     someone else holds it the round is skipped, no strike is counted and the
//     strikes counted so far are dropped, so the count starts again after the
//     deploy. The round releases the lock at its end, so a deploy waits for at
//     most one round.
//   - Maintenance mode. An operator pauses healing for a bounded time with a
//     reason; it persists across agent restarts and ends by itself.
//   - One definition. Healing starts the service from the current published
//     definition; the watchdog reads the definition and never writes,
//     regenerates or "repairs" it, and it never touches an instance of a
//     service that is not in it.
//   - Patience that covers a drain: `mythex check` holds (K−1)·W ≥ drain.max,
//     so even without the lock a draining service is gone before its K-th
//     strike.
//
// Drift — an instance of another spec (version, command, environment, image…)
// running under a service's name — is a strike like a failure, reported as
// drift, and healed by replacing the instance with the definition's spec.
// Healing that does not hold (the service is healed again before it has
// stayed up for K rounds) backs off exponentially and is reported as
// crash-looping instead of restarting as fast as it can. A service the
// platform itself is restarting (Docker's restart policy), or one still
// inside its health check's start period, is neither a strike nor healthy:
// the round waits.
//
// The package is decide-then-act: Decide is a pure function from the previous
// record of a service and one round's observation to the next record and a
// Decision; a round (runOnce) observes, decides for every service, applies the
// heals and publishes status, logs and metrics. The ticker loop only calls the
// round.
package watchdog
