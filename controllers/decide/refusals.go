package decide

// This file decides what becomes of an injection whose pods the API server refused to create: the
// StatefulSet controller deleted a pod to roll it and could not create its successor, so the
// database runs a pod short for as long as the injection stays. The injection is taken back at
// once, paced or not, and not made again until something it was decided from changes.

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// Refusal is a refused pod creation the controller found on a StatefulSet that carries a
// ScratchVolume's injection: the API server's message, and when it was found.
type Refusal struct {
	Message string
	At      time.Time
}

// refuse takes the plan away from every outcome whose injection was refused, now (fresh, by
// ScratchVolume name) or before under the same ScratchVolume spec, pod template and namespace
// rules (the status's record): the write then removes the injection.
func refuse(outcomes map[string]*Outcome, sts *appsv1.StatefulSet, ns inject.Namespace, fresh map[string]Refusal) {
	var th, stamp string
	for name, o := range outcomes {
		if o.Plan == nil && !o.Kept {
			continue
		}
		if th == "" {
			th, stamp = TemplateHash(sts), ns.Stamp()
		}
		rec := standingRefusal(o.SV, sts.Name, th, stamp)
		if f, ok := fresh[name]; ok {
			rec = &v1alpha1.RolloutRefusal{Message: f.Message, Time: metav1.NewTime(f.At), Generation: o.SV.Generation, TemplateHash: th, Rules: stamp}
		}
		if rec == nil {
			continue
		}
		o.Plan, o.Kept, o.Urgent, o.Refusal = nil, false, true, rec
		o.Problem = &inject.Problem{Reason: v1alpha1.ReasonPodsRefused, Message: RefusalMessage(rec)}
	}
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
