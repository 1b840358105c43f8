package readaheadctl_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// sysfsReadAhead reads queue/read_ahead_kb directly, apart from the code under test.
func sysfsReadAhead(name string) (int64, error) {
	b, err := os.ReadFile("/sys/block/" + name + "/queue/read_ahead_kb")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func TestLoopDeviceAppliedAndRevertedOnTheRealHost(t *testing.T) {
	readaheadtest.RequireRoot(t)
	e := setup(t)
	l := readaheadtest.AttachLoop(t, readaheadtest.LoopOptions{})
	// An original no kernel default would give, so that the revert is seen to be exact.
	const original = 384
	if err := (readahead.IoctlHost{DevDir: "/dev"}).SetReadAhead(l.ID(), original); err != nil {
		t.Fatal(err)
	}

	a := newNode(t, e, "vm")
	cfg := a.config()
	cfg.Paths, cfg.Host = readahead.Paths{Root: "/"}, nil
	a.start(t, cfg)
	// The exact name, which starts with "loop" as a loop device's pattern must: "loop*" would
	// also take every other loop device of the machine running the tests.
	p := a.policy(t, "loop", 2048, l.Name)
	create(t, e, p)

	readBack := func(want int64) func() string {
		return func() string {
			got, err := sysfsReadAhead(l.Name)
			if err != nil || got != want {
				return fmt.Sprintf("%s has %d KiB (%v), want %d", l.Name, got, err, want)
			}
			return ""
		}
	}
	testenv.Eventually(t, waitTimeout, readBack(2048))
	testenv.Eventually(t, waitTimeout, func() string {
		if got, want := describe(device(a.profile(t), l.Name)), fmt.Sprintf(`%s %d/2048/2048 ""`, p.Name, original); got != want {
			return fmt.Sprintf("%s: %s, want %s", l.Name, got, want)
		}
		if got := condition(a.profile(t).Status.Conditions, v1alpha1.ConditionReadAheadApplied); !strings.HasPrefix(got, "True") {
			return "ReadAheadApplied: " + got
		}
		return ""
	})

	remove(t, e, p)
	testenv.Eventually(t, waitTimeout, readBack(original))
	testenv.Eventually(t, waitTimeout, func() string {
		if entries, err := readahead.NewStore(a.stateDir).Entries(); err != nil || len(entries) != 0 {
			return fmt.Sprintf("state after the revert: %+v, %v", entries, err)
		}
		return ""
	})
}
