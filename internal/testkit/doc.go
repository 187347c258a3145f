// Package testkit holds small helpers that the tests of several packages
// share: a log sink safe for concurrent writers (SyncBuffer) and a driver
// for a fake clock that a goroutine under test waits on (Drive). It is
// imported only from _test.go files and imports nothing of this module, so
// any package's internal tests can use it without an import cycle.
package testkit
