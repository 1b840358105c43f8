package controllers

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
)

// ReadWhole reads a StatefulSet as a sync that plans it does, for the tests against an API server.
func (r *ScratchVolumeReconciler) ReadWhole(ctx context.Context, sts, live *appsv1.StatefulSet) error {
	return r.readWhole(ctx, sts, live)
}
