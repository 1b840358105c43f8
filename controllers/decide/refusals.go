package decide

// This file decides what becomes of an injection whose pods the API server refused to create: the
// StatefulSet controller deleted a pod to roll it and could not create its successor, so the
// database runs a pod short for as long as the injection stays. The injection is taken back at
// once, paced or not, and not made again until something it was decided from changes.

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Refusal is a refused pod creation the controller found on a StatefulSet that carries a
// ScratchVolume's injection: the API server's message, and when it was found.
type Refusal struct {
	Message string
	At      time.Time
}

// refuse is the state of o once the refusals are known: Refused when its injection was refused,
// now (fresh, by ScratchVolume name) or before under the same ScratchVolume spec, pod template
// (its hash th) and namespace rules (stamp), as the status records; the write then removes the
// injection. Otherwise, and for a ScratchVolume that neither has a plan nor keeps an injection,
// its state as it was.
func refuse(o *Outcome, target, th, stamp string, fresh map[string]Refusal) State {
	if _, injected := o.State.(Injected); !injected && !o.keeps() {
		return o.State
	}
	if f, ok := fresh[o.SV.Name]; ok {
		return Refused{Fresh: true, Record: &v1alpha1.RolloutRefusal{
			Message: f.Message, Time: metav1.NewTime(f.At), Generation: o.SV.Generation, TemplateHash: th, Rules: stamp}}
	}
	if rec := standingRefusal(o.SV, target, th, stamp); rec != nil {
		return Refused{Record: rec}
	}
	return o.State
}

// standingRefusal is the refusal the status records for sv on target, when it was made under the
// ScratchVolume's generation, the pod template (its hash th) and the namespace's rules (stamp) that
// hold now; nil otherwise.
func standingRefusal(sv *v1alpha1.ScratchVolume, target, th, stamp string) *v1alpha1.RolloutRefusal {
	for _, t := range sv.Status.Targets {
		if t.Name == target && t.Refused != nil && t.Refused.Generation == sv.Generation && t.Refused.TemplateHash == th && t.Refused.Rules == stamp {
			return t.Refused
		}
	}
	return nil
}

// RefusalMessage is what the status and the Warning say about a refusal.
func RefusalMessage(rec *v1alpha1.RolloutRefusal) string {
	return fmt.Sprintf("the API server refused to create the pods that carry the RAM volume (%s); the controller put the StatefulSet back to the template that worked at %s and injects again when the ScratchVolume's spec, the StatefulSet's pod template or the namespace's LimitRanges and ResourceQuotas change",
		rec.Message, rec.Time.UTC().Format(time.RFC3339))
}

// LastRefusal is when sv's injection on target was last refused, zero when never: a refusal the
// controller finds later must be newer.
func LastRefusal(sv *v1alpha1.ScratchVolume, target string) time.Time {
	for _, t := range sv.Status.Targets {
		if t.Name == target && t.Refused != nil {
			return t.Refused.Time.Time
		}
	}
	return time.Time{}
}
