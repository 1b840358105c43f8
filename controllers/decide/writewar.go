package decide

// This file decides the write-war verdict: when the controller stops restoring entries another writer
// keeps removing from a StatefulSet, for how long, and what the status and the Event say about it.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// The write-war rule's defaults: the window allows 3 restores in 10 minutes; a 4th needed within
// it means another writer removes the entries as fast as they are put back, and every restore
// rolls the database pods.
const (
	DefaultWriteWarRestores = 3
	DefaultWriteWarWindow   = 10 * time.Minute
	// maxHoldWindows bounds the growing hold: 32 windows, 5h20m with the default window.
	maxHoldWindows = 32
	// maxRestoresKept bounds status.targets[].restores.
	maxRestoresKept = 16
)

// WriteWarRule says when the controller stops restoring its entries on a StatefulSet that another
// writer keeps removing them from. Zero fields take the defaults.
type WriteWarRule struct {
	// Restores is how many restores of one StatefulSet the window allows.
	Restores int
	// Window is how far back restores count, how long the first hold lasts, and how long a try
	// after a hold must survive for the fight to be over.
	Window time.Duration
}

// OrDefaults is w with the defaults in place of its zero fields.
func (w WriteWarRule) OrDefaults() WriteWarRule {
	if w.Restores <= 0 {
		w.Restores = DefaultWriteWarRestores
	}
	if w.Window <= 0 {
		w.Window = DefaultWriteWarWindow
	}
	return w
}

// holdFor is how long hold number n (from 1) lasts: the window, doubling with every hold of the
// same fight, up to maxHoldWindows windows.
func (w WriteWarRule) holdFor(n int32) time.Duration {
	d := w.Window
	for i := int32(1); i < n && d < maxHoldWindows*w.Window; i++ {
		d *= 2
	}
	return min(d, maxHoldWindows*w.Window)
}

// Guard is what the controller remembers of its restores on one StatefulSet. It lives in the
// reconciler and, for a restarted manager, in status.targets[] of the ScratchVolumes that select
// the StatefulSet.
type Guard struct {
	// Restores are the times of the restores within the window.
	Restores []metav1.Time
	// War is the fight going on, nil when there is none.
	War *v1alpha1.WriteWar
}

// prune drops the restores that fell out of the window.
func (g Guard) prune(now time.Time, w WriteWarRule) Guard {
	var kept []metav1.Time
	for _, t := range g.Restores {
		if now.Sub(t.Time) < w.Window {
			kept = append(kept, t)
		}
	}
	g.Restores = kept
	return g
}

// BeforeRestore applies the rule before a write that puts back entries someone removed; key
// identifies what the controller wants written (a new spec makes a new key). It returns the new
// state, whether to hold off instead of writing, and whether a new hold begins (the first of a
// fight has Holds 1).
func (w WriteWarRule) BeforeRestore(g Guard, now time.Time, key string) (next Guard, hold, fresh bool) {
	g = g.prune(now, w)
	hold1 := func(n int32) *v1alpha1.WriteWar {
		return &v1alpha1.WriteWar{Holds: n, HeldSince: metav1.NewTime(now), RetryAt: metav1.NewTime(now.Add(w.holdFor(n))), ConfigHash: key}
	}
	switch {
	case g.War == nil && len(g.Restores) < w.Restores:
		return g, false, false
	case g.War == nil:
		g.War = hold1(1)
		return g, true, true
	case !g.War.TriedAt.IsZero():
		// The try after the last hold was undone before the window passed: the writer is still at it.
		g.War = hold1(g.War.Holds + 1)
		return g, true, true
	case g.War.ConfigHash == key && now.Before(g.War.RetryAt.Time):
		return g, true, false
	}
	// The hold is over, or the spec changed: try once.
	return g, false, false
}

// AfterWrite records a write: a restore counts towards the window, and any write during a fight is
// the one try the hold allows.
func (w WriteWarRule) AfterWrite(g Guard, now time.Time, restore bool) Guard {
	if restore {
		g.Restores = append(g.Restores, metav1.NewTime(now))
		if n := len(g.Restores); n > maxRestoresKept {
			g.Restores = g.Restores[n-maxRestoresKept:]
		}
	}
	if g.War != nil {
		war := g.War.DeepCopy()
		war.TriedAt = metav1.NewTime(now)
		g.War = war
	}
	return g
}

// Settled updates the state when the StatefulSet carries every entry and nothing is written: a
// try that survived the window ends the fight.
func (w WriteWarRule) Settled(g Guard, now time.Time) Guard {
	g = g.prune(now, w)
	if g.War == nil {
		return g
	}
	war := g.War.DeepCopy()
	if war.TriedAt.IsZero() {
		// The entries came back without the controller writing them: count from now.
		war.TriedAt = metav1.NewTime(now)
	}
	if now.Sub(war.TriedAt.Time) >= w.Window {
		war = nil
	}
	g.War = war
	return g
}

// Wake is when the guard needs the next reconcile without an event: the end of a hold, or the end
// of the window a try must survive; zero when nothing waits.
func (w WriteWarRule) Wake(g Guard) time.Time {
	switch {
	case g.War == nil:
		return time.Time{}
	case g.War.TriedAt.IsZero():
		return g.War.RetryAt.Time
	default:
		return g.War.TriedAt.Add(w.Window)
	}
}

// GuardFromStatus merges what the ScratchVolumes' status says about target: every restore, and
// the fight with the most holds.
func GuardFromStatus(svs []*v1alpha1.ScratchVolume, target string) Guard {
	var g Guard
	seen := map[time.Time]bool{}
	for i := range svs {
		for _, ts := range svs[i].Status.Targets {
			if ts.Name != target {
				continue
			}
			for _, t := range ts.Restores {
				if !seen[t.Time] {
					seen[t.Time] = true
					g.Restores = append(g.Restores, t)
				}
			}
			if ts.WriteWar != nil && (g.War == nil || ts.WriteWar.Holds > g.War.Holds) {
				g.War = ts.WriteWar.DeepCopy()
			}
		}
	}
	sort.Slice(g.Restores, func(i, j int) bool { return g.Restores[i].Before(&g.Restores[j]) })
	return g
}

// ConfigKey identifies what the controller wants on a StatefulSet: every ScratchVolume's config
// hash.
func ConfigKey(desired inject.Entries) string {
	keys := make([]string, 0, len(desired.Annotations))
	for k, v := range desired.Annotations {
		if strings.HasPrefix(k, v1alpha1.InjectionAnnotationPrefix) {
			keys = append(keys, k+"="+v)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// removedEntries names the entries of want that have is missing or holds with other values:
// volumes first, which say most, then mounts, init containers and annotations.
func removedEntries(want, have inject.Entries) []string {
	var volumes, mounts, inits, annotations []string
	for _, v := range want.Volumes {
		if !containsEqual(have.Volumes, v) {
			volumes = append(volumes, "the volume "+v.Name)
		}
	}
	for container, ms := range want.Mounts {
		for _, m := range ms {
			if !containsEqual(have.Mounts[container], m) {
				mounts = append(mounts, fmt.Sprintf("the mount %s in container %s", m.MountPath, container))
			}
		}
	}
	for _, c := range want.InitContainers {
		if !containsEqual(have.InitContainers, c) {
			inits = append(inits, "the init container "+c.Name)
		}
	}
	for k, v := range want.Annotations {
		if have.Annotations[k] != v {
			annotations = append(annotations, "the pod-template annotation "+k)
		}
	}
	var out []string
	for _, group := range [][]string{volumes, mounts, inits, annotations} {
		sort.Strings(group)
		out = append(out, group...)
	}
	return out
}

func containsEqual[T any](items []T, v T) bool {
	for _, it := range items {
		if equality.Semantic.DeepEqual(it, v) {
			return true
		}
	}
	return false
}

// maxCandidates bounds status.targets[].writeWar.candidates.
const maxCandidates = 16

// UpdateWriters lists the field managers that may have removed the controller's entries from sts,
// newest update first: every manager that updates it (an update sends the whole object and can
// drop fields it never owned, where an apply only removes its own), whatever fields it owns now
// — a writer that puts back a stored copy of the pod template changes none of its fields and so
// owns none of them. The controller itself and the status writers are left out. The API server
// records who last changed each field, not who removed one, so these are candidates, not culprits.
func UpdateWriters(sts *appsv1.StatefulSet) []v1alpha1.WriteCandidate {
	var out []v1alpha1.WriteCandidate
	for _, mf := range sts.ManagedFields {
		if mf.Manager == v1alpha1.FieldManager || mf.Subresource != "" || mf.Operation != metav1.ManagedFieldsOperationUpdate {
			continue
		}
		c := v1alpha1.WriteCandidate{FieldManager: mf.Manager}
		if mf.Time != nil {
			c.LastUpdate = *mf.Time
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUpdate.After(out[j].LastUpdate.Time) })
	if len(out) > maxCandidates {
		out = out[:maxCandidates]
	}
	return out
}

// FightMessage is the condition message of a StatefulSet the controller holds off writing. It
// names no writer as the remover: managedFields cannot tell.
func FightMessage(sts string, war *v1alpha1.WriteWar, w WriteWarRule) string {
	what := "the controller's entries"
	if len(war.Removed) > 0 {
		what = conditions.Names(war.Removed, 4)
	}
	why := fmt.Sprintf("after %d restores within %s", w.Restores, w.Window)
	if war.Holds > 1 {
		why = fmt.Sprintf("again after the try that ended hold %d", war.Holds-1)
	}
	who := "the StatefulSet's managedFields name no other manager that updates it, so the remover is not known"
	if n := len(war.Candidates); n > 0 {
		names := make([]string, n)
		for i, c := range war.Candidates {
			names[i] = c.FieldManager + " (last update not recorded)"
			if !c.LastUpdate.IsZero() {
				names[i] = fmt.Sprintf("%s (last update %s)", c.FieldManager, c.LastUpdate.UTC().Format(time.RFC3339))
			}
		}
		who = "the remover is not known for sure: " +
			conditions.Plural(n, "the one field manager that updates the StatefulSet is ", "the field managers that update the StatefulSet, newest first, are ") +
			conditions.Names(names, 3)
	}
	return fmt.Sprintf("another writer removed %s %s; the API server records who last changed each field, not who removed one, so %s; "+
		"each restore rolls the pods, so the controller stopped writing to StatefulSet %s and tries again at %s (every hold lasts "+
		"twice as long as the one before), or at once when the spec changes: make the writer keep fields it does not own "+
		"(server-side apply, or updates of the live object), or configure the RAM tmpdir through it",
		what, why, who, sts, war.RetryAt.UTC().Format(time.RFC3339))
}

// WithWriters is g at the start of a hold, listing the candidates for the remover (from sts's
// managedFields, which the cache drops: sts is the whole object) and the entries removed.
func (g Guard) WithWriters(sts *appsv1.StatefulSet, removed []string) Guard {
	g.War = g.War.DeepCopy()
	g.War.Candidates, g.War.Removed = UpdateWriters(sts), removed
	return g
}
