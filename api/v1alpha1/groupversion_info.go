// Package v1alpha1 contains the reflux.dev/v1alpha1 API: ReverseSyncPolicy,
// which says how drift from Git is classified and written back, and Drift,
// the durable record of one drifted live object.
//
// +kubebuilder:object:generate=true
// +groupName=reflux.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "reflux.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
