// Package e2e holds end-to-end tests that run mythex's parts as the real
// processes a user runs — `mythex lb`, `mythex sample-app`, the prober — and
// prove the write-up's result on them. It has no code of its own.
package e2e
