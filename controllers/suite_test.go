package controllers_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

// writeWarWindow is the test manager's write-war window (10 minutes in the product).
const writeWarWindow = 6 * time.Second

// progressDeadline is the test manager's default progress deadline (10 minutes in the product).
const progressDeadline = 8 * time.Second

var (
	env *testenv.Env
	// writes counts the controller's writes.
	writes dbWrites

	managerOnce sync.Once
	managerErr  error
	stopManager = func() {}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, func() { stopManager() }))
}

// startManager runs the real manager (same cache options and reconciler as the binary) against the
// test API server, once per package, with its writes counted.
func startManager(t *testing.T) *testenv.Env {
	t.Helper()
	e := testenv.Require(t, env)
	managerOnce.Do(func() {
		var m *testmanager.Manager
		m, managerErr = testmanager.Start(e.Config, e.Scheme, func(r *controllers.ScratchVolumeReconciler) {
			// The default rule with a window short enough for a test to see a fight end.
			r.WriteWar = decide.WriteWarRule{Restores: decide.DefaultWriteWarRestores, Window: writeWarWindow}
			// No pacing but where a ScratchVolume asks for it (envtest runs no StatefulSet
			// controller, so nothing ever rolls out by itself), with a deadline short enough to
			// see a rollout stop.
			r.ProgressDeadline = progressDeadline
		})
		if managerErr == nil {
			writes = dbWrites{m.Writes}
			stopManager = func() { _ = m.Stop() }
		}
	})
	if managerErr != nil {
		t.Fatalf("failed to start the manager: %v", managerErr)
	}
	return e
}

// dbWrites are the manager's writes, read for the StatefulSet every test here names "db".
type dbWrites struct{ *testmanager.Writes }

// get returns the writes to the StatefulSet "db" of namespace ns.
func (w dbWrites) get(ns string) int { return w.Count("statefulsets", ns, "db") }

// waitTimeout is how long testenv.Eventually waits here for the controller to act.
const waitTimeout = 20 * time.Second

func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
