package origin

import "strings"

// fieldSpec mirrors kustomize's FieldSpec: where a transformer writes.
type fieldSpec struct {
	group, kind string
	path        string
	create      bool
}

func (fs fieldSpec) applies(o *object) bool {
	return (fs.kind == "" || fs.kind == o.kind()) && (fs.group == "" || fs.group == o.group())
}

// visit calls fn with every map found at the spec's path in o.
func (fs fieldSpec) visit(o *object, fn func(m *node)) {
	if fs.applies(o) {
		visitPath(o.root, strings.Split(fs.path, "/"), fs.create, fn)
	}
}

func visitPath(n *node, path []string, create bool, fn func(m *node)) {
	if n == nil || n.kind != mapNode {
		return
	}
	if len(path) == 0 {
		fn(n)
		return
	}
	seg := path[0]
	if strings.HasSuffix(seg, "[]") {
		list := n.get(strings.TrimSuffix(seg, "[]"))
		if list == nil || list.kind != seqNode {
			return
		}
		for _, it := range list.items {
			visitPath(it, path[1:], create, fn)
		}
		return
	}
	c := n.get(seg)
	if c == nil && !create {
		return
	}
	if c == nil || c.kind != mapNode {
		c = n.ensureMap(seg)
	}
	visitPath(c, path[1:], create, fn)
}

func specs(lines ...string) []fieldSpec {
	var out []fieldSpec
	for _, l := range lines {
		f := strings.Fields(l) // "group kind path create"
		out = append(out, fieldSpec{group: dash(f[0]), kind: dash(f[1]), path: f[2], create: f[3] == "true"})
	}
	return out
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// metadataLabelSpecs are kustomize's templateLabels field specs.
var metadataLabelSpecs = specs(
	"- - metadata/labels true",
	"- ReplicationController spec/template/metadata/labels true",
	"- Deployment spec/template/metadata/labels true",
	"- ReplicaSet spec/template/metadata/labels true",
	"- DaemonSet spec/template/metadata/labels true",
	"apps StatefulSet spec/template/metadata/labels true",
	"apps StatefulSet spec/volumeClaimTemplates[]/metadata/labels true",
	"batch Job spec/template/metadata/labels true",
	"batch CronJob spec/jobTemplate/metadata/labels true",
	"batch CronJob spec/jobTemplate/spec/template/metadata/labels true",
)

// selectorLabelSpecs are the selector parts of kustomize's commonLabels specs.
var selectorLabelSpecs = specs(
	"- Service spec/selector true",
	"- ReplicationController spec/selector true",
	"- Deployment spec/selector/matchLabels true",
	"- ReplicaSet spec/selector/matchLabels true",
	"- DaemonSet spec/selector/matchLabels true",
	"apps StatefulSet spec/selector/matchLabels true",
	"batch Job spec/selector/matchLabels false",
	"batch CronJob spec/jobTemplate/spec/selector/matchLabels false",
	"policy PodDisruptionBudget spec/selector/matchLabels false",
	"networking.k8s.io NetworkPolicy spec/podSelector/matchLabels false",
	"networking.k8s.io NetworkPolicy spec/ingress[]/from[]/podSelector/matchLabels false",
	"networking.k8s.io NetworkPolicy spec/egress[]/to[]/podSelector/matchLabels false",
	"apps Deployment "+podAffinityPreferred, "apps Deployment "+podAffinityRequired,
	"apps Deployment "+podAntiAffinityPreferred, "apps Deployment "+podAntiAffinityRequired,
	"apps Deployment "+topologySpread,
	"apps StatefulSet "+podAffinityPreferred, "apps StatefulSet "+podAffinityRequired,
	"apps StatefulSet "+podAntiAffinityPreferred, "apps StatefulSet "+podAntiAffinityRequired,
	"apps StatefulSet "+topologySpread,
)

// Pod (anti-)affinity and spread selectors kustomize's commonLabels reach,
// but never create.
const (
	podAffinityPreferred     = "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution[]/podAffinityTerm/labelSelector/matchLabels false"
	podAffinityRequired      = "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution[]/labelSelector/matchLabels false"
	podAntiAffinityPreferred = "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution[]/podAffinityTerm/labelSelector/matchLabels false"
	podAntiAffinityRequired  = "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution[]/labelSelector/matchLabels false"
	topologySpread           = "spec/template/spec/topologySpreadConstraints[]/labelSelector/matchLabels false"
)

var annotationSpecs = specs(
	"- - metadata/annotations true",
	"- ReplicationController spec/template/metadata/annotations true",
	"- Deployment spec/template/metadata/annotations true",
	"- ReplicaSet spec/template/metadata/annotations true",
	"- DaemonSet spec/template/metadata/annotations true",
	"- StatefulSet spec/template/metadata/annotations true",
	"batch Job spec/template/metadata/annotations true",
	"batch CronJob spec/jobTemplate/metadata/annotations true",
	"batch CronJob spec/jobTemplate/spec/template/metadata/annotations true",
)

var replicaKinds = map[string]bool{"Deployment": true, "ReplicationController": true, "ReplicaSet": true, "StatefulSet": true}

// clusterScoped lists built-in kinds the namespace transformer skips.
// Unknown kinds are namespaced, as in kustomize without a schema for them.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true, "IngressClass": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true, "APIService": true,
	"Node": true, "CSIDriver": true, "RuntimeClass": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "ComponentStatus": true, "CertificateSigningRequest": true,
	"VolumeAttachment": true, "CSINode": true,
}
