// Package v1alpha1 contains the dbtune.io/v1alpha1 API: ScratchVolume, which gives database
// StatefulSets a RAM-backed scratch volume, and the node-agent's NodeIOProfile and ReadAheadPolicy.
//
// +kubebuilder:object:generate=true
// +groupName=dbtune.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "dbtune.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
