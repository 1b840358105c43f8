package testenv

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually and Consistently look again.
const pollInterval = 100 * time.Millisecond

// Eventually polls cond until it returns "" or timeout passes, then fails t with the last reason cond
// gave. A condition returns a sentence saying what is not there yet, so a failure explains itself.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, why)
		}
		time.Sleep(pollInterval)
	}
}

// Consistently fails t if cond reports a problem at any point during d.
func Consistently(t testing.TB, d time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if why := cond(); why != "" {
			t.Fatalf("condition broken: %s", why)
		}
		time.Sleep(pollInterval)
	}
}
