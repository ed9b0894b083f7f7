// Package v1alpha1 holds the etcd.raftsman.io/v1alpha1 API: EtcdCluster, the
// desired state of one etcd cluster, and EtcdMember, one member of it.
// +kubebuilder:object:generate=true
// +groupName=etcd.raftsman.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "etcd.raftsman.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package in a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
