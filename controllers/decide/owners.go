package decide

// This file decides whether another controller runs a StatefulSet, which leaves it alone.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// controlledElsewhere returns why sv must leave sts alone because another controller runs it, or
// nil. Only the controller owner reference counts: other owner references (garbage collection
// only) say nothing about who writes the pod template, and people, Helm, Argo CD and Flux set
// none. An owner sv's spec.target.allowedControllers lists is trusted to keep our entries.
func controlledElsewhere(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) *inject.Problem {
	ref := metav1.GetControllerOfNoCopy(sts)
	if ref == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		gv = schema.GroupVersion{Group: ref.APIVersion}
	}
	for _, allowed := range sv.Spec.Target.AllowedControllers {
		if allowed.APIGroup == gv.Group && allowed.Kind == ref.Kind {
			return nil
		}
	}
	group := gv.Group
	if group == "" {
		group = "core"
	}
	return &inject.Problem{Reason: v1alpha1.ReasonControlledByOperator, Message: fmt.Sprintf(
		"StatefulSet %s is controlled by %s %s (API group %s), an operator that may rewrite its pod template "+
			"and would undo the injection, rolling the pods each time: give the database its RAM tmpdir through "+
			"that operator's own settings (see the operators in docs/tuning.md), or, if the operator keeps "+
			"entries of other field managers (server-side apply that never forces ownership), add {apiGroup: %s, kind: %s} to "+
			"spec.target.allowedControllers",
		sts.Name, ref.Kind, ref.Name, group, gv.Group, ref.Kind)}
}

// ControllerName names the controlling owner of sts as a decision depends on it, "" for none.
func ControllerName(sts *appsv1.StatefulSet) string {
	if ref := metav1.GetControllerOfNoCopy(sts); ref != nil {
		return ref.APIVersion + "/" + ref.Kind + "/" + ref.Name
	}
	return ""
}
