// Package publish is the publish gate: it moves an app's machines on a
// machines platform (internal/platform) to a new release, judges the
// release — live, failed or unknown — and applies the verdict: promote it,
// roll back to the last known good release, or change nothing.
//
// Two halves, kept apart on purpose:
//
//   - The verdict is a pure function. Judge takes the looks taken so far
//     (each: the platform's view of every machine — state, config, its
//     bounded event list, restart count — plus a health probe), the policy
//     (stable window, crash-loop window, start period, unhealthy threshold)
//     and the window's end, and returns a Verdict: pending with the delay
//     before the next look, or a final status with a reason per machine.
//     It never calls anything, never reads a clock: every rule — the latest
//     crash compared across looks, two crashes in one list, the platform
//     giving up, wrong health answers after the start period, an update not
//     yet applied — is table-tested from fixtures (verdict_test.go,
//     testdata/cases). Timestamps of the platform are compared only with
//     each other and with the publish's own write as the platform recorded
//     it; uptime is measured between our own looks, so a skewed platform
//     clock cannot stretch or shrink it.
//
//   - The look loop (Gate.lookLoop, looks.go) takes the looks on an
//     injected clock — one Get per machine, a direct health probe, the app's
//     URL when it stands for the machines — calls Judge after each, and
//     sleeps for the delay the verdict asks for, until the verdict is final
//     or the window ends. Gate.Publish around it does the writes (create or
//     update the machines, under the platform's leases), and applies the
//     verdict (switch the router, restore the last good release, record the
//     release in the Store). Control-plane errors are recorded in the looks
//     as such and never become a failure by themselves.
//
// The Reconciler runs the same loop later against releases already live
// (the previous round's last look is its baseline) and finishes releases a
// publish left pending or interrupted.
package publish
