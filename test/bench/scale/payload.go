package main

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// writes are the server-side applies that inject one ScratchVolume into one StatefulSet: the
// my.cnf drop-in ConfigMap, then the StatefulSet's entries. The bare client sends exactly these,
// under the controller's field manager, to measure what the API server itself takes for them.
type writes struct {
	configMap   *corev1ac.ConfigMapApplyConfiguration
	statefulSet *appsv1ac.StatefulSetApplyConfiguration
}

// injectionWrites computes, with the controller's own planning code, the requests the controller
// sends for sv on a StatefulSet that carries nothing of ours yet. The ConfigMap has no owner
// reference: sv does not exist while the bare client runs, and the garbage collector would
// otherwise delete the ConfigMaps of a missing owner in the middle of the measurement.
func injectionWrites(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) (writes, error) {
	plan, err := inject.NewPlan(sv, sts, inject.Namespace{})
	if err != nil {
		return writes{}, fmt.Errorf("failed to plan %s for StatefulSet %s/%s: %w", sv.Name, sts.Namespace, sts.Name, err)
	}
	if plan.ConfigVolume == nil {
		return writes{}, errors.New("the benchmark's ScratchVolumes must use ConfigFile injection")
	}
	plans := []*inject.Plan{plan}
	user := inject.Strip(sts.Spec.Template)
	changes, states := inject.Overrides(&user, &sts.Spec.Template, plans, nil)
	if pending := inject.Pending(&sts.Spec.Template, changes, &user); len(pending) > 0 {
		return writes{}, fmt.Errorf("StatefulSet %s/%s would need a container patch too; the benchmark's shapes must not", sts.Namespace, sts.Name)
	}
	ac, err := inject.Desired(plans).WithAnnotations(states).ApplyConfiguration(sts.Name, sts.Namespace)
	if err != nil {
		return writes{}, err
	}
	cm := corev1ac.ConfigMap(sv.ConfigMapName(sts.Name), sts.Namespace).
		WithLabels(map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: sv.Name}).
		WithAnnotations(map[string]string{v1alpha1.TargetAnnotation: sts.Name}).
		WithData(map[string]string{plan.ConfigKey: plan.ConfigData})
	return writes{configMap: cm, statefulSet: ac}, nil
}
