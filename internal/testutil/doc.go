// Package testutil holds helpers shared by the lab's tests. Eventually is
// the one way a test waits for something asynchronous to become true; a
// test that must prove something did NOT happen waits for a barrier (a later
// event known to come after it) instead of sleeping, and this package has
// no helper for sleeping on purpose.
package testutil
