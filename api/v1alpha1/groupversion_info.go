// Package v1alpha1 contains the dbtune.io/v1alpha1 API: ScratchVolume, which gives database
// StatefulSets a RAM-backed scratch volume, and the node-agent's NodeIOProfile and ReadAheadPolicy.
//
// +kubebuilder:object:generate=true
// +groupName=dbtune.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "dbtune.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ScratchVolume{}, &ScratchVolumeList{},
		&NodeIOProfile{}, &NodeIOProfileList{},
		&ReadAheadPolicy{}, &ReadAheadPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
