package chart

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BuiltinClusterScoped reports whether gk is one of Kubernetes' built-in
// cluster-scoped kinds. Every other kind, custom resources included, is
// taken to be namespaced: a chart that renders a custom cluster-scoped
// kind without a namespace is keyed in the release's namespace unless
// Release.ClusterScoped says otherwise. Offline, nothing better is known.
func BuiltinClusterScoped(gk schema.GroupKind) bool {
	switch gk.Group {
	case "":
		return gk.Kind == "Namespace" || gk.Kind == "Node" || gk.Kind == "PersistentVolume" || gk.Kind == "ComponentStatus"
	case "rbac.authorization.k8s.io":
		return gk.Kind == "ClusterRole" || gk.Kind == "ClusterRoleBinding"
	case "apiextensions.k8s.io":
		return gk.Kind == "CustomResourceDefinition"
	case "apiregistration.k8s.io":
		return gk.Kind == "APIService"
	case "storage.k8s.io":
		return gk.Kind == "StorageClass" || gk.Kind == "CSIDriver" || gk.Kind == "CSINode" ||
			gk.Kind == "VolumeAttachment" || gk.Kind == "VolumeAttributesClass"
	case "scheduling.k8s.io":
		return gk.Kind == "PriorityClass"
	case "node.k8s.io":
		return gk.Kind == "RuntimeClass"
	case "networking.k8s.io":
		return gk.Kind == "IngressClass" || gk.Kind == "IPAddress" || gk.Kind == "ServiceCIDR"
	case "admissionregistration.k8s.io":
		return gk.Kind == "ValidatingWebhookConfiguration" || gk.Kind == "MutatingWebhookConfiguration" ||
			gk.Kind == "ValidatingAdmissionPolicy" || gk.Kind == "ValidatingAdmissionPolicyBinding" ||
			gk.Kind == "MutatingAdmissionPolicy" || gk.Kind == "MutatingAdmissionPolicyBinding"
	case "certificates.k8s.io":
		return gk.Kind == "CertificateSigningRequest" || gk.Kind == "ClusterTrustBundle"
	case "flowcontrol.apiserver.k8s.io":
		return gk.Kind == "FlowSchema" || gk.Kind == "PriorityLevelConfiguration"
	case "resource.k8s.io":
		return gk.Kind == "DeviceClass"
	}
	return false
}

// ClusterScopedBy asks the apiserver, through m, which kinds have no
// namespace, so that a chart's objects are keyed as the cluster holds
// them; a kind m does not know is taken as BuiltinClusterScoped takes it.
func ClusterScopedBy(m meta.RESTMapper) func(schema.GroupKind) bool {
	return func(gk schema.GroupKind) bool {
		mapping, err := m.RESTMapping(gk)
		if err != nil {
			return BuiltinClusterScoped(gk)
		}
		return mapping.Scope.Name() == meta.RESTScopeNameRoot
	}
}
