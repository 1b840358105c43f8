package decide

// This file decides the write-war verdict: when the controller stops restoring entries another writer
// keeps removing from a StatefulSet, for how long, and what the status and the Event say about it.

import (
	"fmt"
	"slices"
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

// names are what the entries are called, for people.
func names(cs []contested) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.what
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

// Writers lists the field managers to name for what a restore puts back on sts: first those
// that own a field of an entry sts holds with other values, which set what sts holds there now (a
// server-side apply as much as an update: both record the fields they set); then, when an entry
// is gone or changed by no manager still recorded, the managers that may have removed it
// (UpdateWriters). Each group newest first; the controller's own field managers are never named.
func Writers(sts *appsv1.StatefulSet, r Restore) []v1alpha1.WriteCandidate {
	out := owners(sts, r.entries)
	newestFirst(out)
	if unowned(r.Names(), out) {
		for _, c := range UpdateWriters(sts) {
			if !slices.ContainsFunc(out, func(o v1alpha1.WriteCandidate) bool {
				return o.FieldManager == c.FieldManager && o.Operation == metav1.ManagedFieldsOperationUpdate
			}) {
				out = append(out, c)
			}
		}
	}
	if len(out) > maxCandidates {
		out = out[:maxCandidates]
	}
	return out
}

// unowned reports whether any of removed is owned by none of the candidates.
func unowned(removed []string, candidates []v1alpha1.WriteCandidate) bool {
	if len(removed) == 0 {
		return true
	}
	for _, what := range removed {
		if !slices.ContainsFunc(candidates, func(c v1alpha1.WriteCandidate) bool { return slices.Contains(c.Owns, what) }) {
			return true
		}
	}
	return false
}

func newestFirst(cs []v1alpha1.WriteCandidate) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].LastUpdate.After(cs[j].LastUpdate.Time) })
}

// UpdateWriters lists the field managers that may have removed the controller's entries from sts,
// newest update first: every manager that updates it (an update sends the whole object and can
// drop fields it never owned, where an apply only removes its own), whatever fields it owns now
// — a writer that puts back a stored copy of the pod template changes none of its fields and so
// owns none of them. The controller itself and the status writers are left out. The API server
// records who last changed each field, not who removed one, so these are candidates, not culprits.
func UpdateWriters(sts *appsv1.StatefulSet) []v1alpha1.WriteCandidate {
	var out []v1alpha1.WriteCandidate
	for _, mf := range sts.ManagedFields {
		if ownManager(mf.Manager) || mf.Subresource != "" || mf.Operation != metav1.ManagedFieldsOperationUpdate {
			continue
		}
		c := v1alpha1.WriteCandidate{FieldManager: mf.Manager}
		if mf.Time != nil {
			c.LastUpdate = *mf.Time
		}
		out = append(out, c)
	}
	newestFirst(out)
	if len(out) > maxCandidates {
		out = out[:maxCandidates]
	}
	return out
}

// FightMessage is the condition message of a StatefulSet the controller holds off writing. It names
// the field managers that own what the StatefulSet holds in place of an entry, which set it; for an
// entry that is gone it names no writer as the remover, only candidates: managedFields cannot tell.
func FightMessage(sts string, war *v1alpha1.WriteWar, w WriteWarRule) string {
	what := "the controller's entries"
	if len(war.Removed) > 0 {
		what = conditions.Names(war.Removed, 4)
	}
	why := fmt.Sprintf("after %d restores within %s", w.Restores, w.Window)
	if war.Holds > 1 {
		why = fmt.Sprintf("again after the try that ended hold %d", war.Holds-1)
	}
	// Any manager that updates the StatefulSet may have removed an entry, whether it owns another
	// one or not; one that applies cannot have.
	var owning, updating []v1alpha1.WriteCandidate
	for _, c := range war.Candidates {
		if len(c.Owns) > 0 {
			owning = append(owning, c)
		}
		if c.Operation != metav1.ManagedFieldsOperationApply {
			updating = append(updating, c)
		}
	}
	var who []string
	if len(owning) > 0 {
		who = append(who, ownersSaying(owning))
	}
	if len(owning) == 0 || unowned(war.Removed, owning) {
		who = append(who, removersSaying(updating))
	}
	return fmt.Sprintf("another writer removed or changed %s %s; %s; "+
		"each restore rolls the pods, so the controller stopped writing to StatefulSet %s and tries again at %s (every hold lasts "+
		"twice as long as the one before), or at once when the spec changes: make the writer keep fields it does not own "+
		"(server-side apply, or updates of the live object), or configure the RAM tmpdir through it",
		what, why, strings.Join(who, "; "), sts, war.RetryAt.UTC().Format(time.RFC3339))
}

// ownersSaying names the field managers that own what the StatefulSet holds in place of entries.
func ownersSaying(owning []v1alpha1.WriteCandidate) string {
	said := make([]string, len(owning))
	for i, c := range owning {
		how := "an update"
		if c.Operation == metav1.ManagedFieldsOperationApply {
			how = "a server-side apply"
		}
		when := "time not recorded"
		if !c.LastUpdate.IsZero() {
			when = "last change " + c.LastUpdate.UTC().Format(time.RFC3339)
		}
		said[i] = fmt.Sprintf("%s (with %s, %s) owns %s", c.FieldManager, how, when, strings.Join(c.Owns, " and "))
	}
	return "the StatefulSet's managedFields name who set what it holds there now: " +
		conditions.Plural(len(owning), "field manager ", "field managers ") + conditions.Names(said, 3)
}

// removersSaying names the candidates for the remover of entries that are gone.
func removersSaying(candidates []v1alpha1.WriteCandidate) string {
	who := "the StatefulSet's managedFields name no other manager that updates it, so the remover is not known"
	if n := len(candidates); n > 0 {
		names := make([]string, n)
		for i, c := range candidates {
			names[i] = c.FieldManager + " (last update not recorded)"
			if !c.LastUpdate.IsZero() {
				names[i] = fmt.Sprintf("%s (last update %s)", c.FieldManager, c.LastUpdate.UTC().Format(time.RFC3339))
			}
		}
		who = "the remover is not known for sure: " +
			conditions.Plural(n, "the one field manager that updates the StatefulSet is ", "the field managers that update the StatefulSet, newest first, are ") +
			conditions.Names(names, 3)
	}
	return "the API server records who last changed each field, not who removed one, so " + who
}

// WithWriters is g at the start of a hold, naming the writers (Writers, from sts's managedFields,
// which the cache drops: sts is the whole object) and the entries r puts back.
func (g Guard) WithWriters(sts *appsv1.StatefulSet, r Restore) Guard {
	g.War = g.War.DeepCopy()
	g.War.Candidates, g.War.Removed = Writers(sts, r), r.Names()
	return g
}
