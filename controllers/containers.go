package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// patchContainers writes the args, environment and memory of Args and ExtraFlags injection and
// Reserve accounting with a JSON
// patch: these are fields server-side apply cannot share (see inject.Overrides). The patch first tests
// the resourceVersion and each container's name, so it applies to exactly the object the decision was
// made on, or not at all.
func (r *ScratchVolumeReconciler) patchContainers(ctx context.Context, sts *appsv1.StatefulSet, pending []inject.ContainerChange) error {
	if len(pending) == 0 {
		return nil
	}
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: sts.ResourceVersion}}
	for _, ch := range pending {
		idx := -1
		for i, c := range sts.Spec.Template.Spec.Containers {
			if c.Name == ch.Container {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		base := "/spec/template/spec/containers/" + strconv.Itoa(idx)
		ops = append(ops, jsonPatchOp{Op: "test", Path: base + "/name", Value: ch.Container})
		live := &sts.Spec.Template.Spec.Containers[idx]
		switch {
		case len(ch.Args) > 0:
			ops = append(ops, jsonPatchOp{Op: "add", Path: base + "/args", Value: ch.Args})
		case len(live.Args) > 0:
			ops = append(ops, jsonPatchOp{Op: "remove", Path: base + "/args"})
		}
		switch {
		case equality.Semantic.DeepEqual(live.Env, ch.Env):
		case len(ch.Env) > 0:
			ops = append(ops, jsonPatchOp{Op: "add", Path: base + "/env", Value: ch.Env})
		default:
			ops = append(ops, jsonPatchOp{Op: "remove", Path: base + "/env"})
		}
		if ch.Request != nil {
			ops = append(ops, jsonPatchOp{Op: "add", Path: base + "/resources/requests/memory", Value: ch.Request.String()})
		}
		if ch.Limit != nil {
			ops = append(ops, jsonPatchOp{Op: "add", Path: base + "/resources/limits/memory", Value: ch.Limit.String()})
		}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("failed to encode a patch for StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	if err := r.Patch(ctx, sts, client.RawPatch(types.JSONPatchType, raw), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("failed to patch the containers of StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	statefulSetWrites.WithLabelValues("containers").Inc()
	return nil
}
