package release

import (
	"context"
	"fmt"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// noDrift is helm-controller's Drifted condition for a release in sync.
const noDrift = "False/NoDriftDetected: No drift detected against the cluster state"

// TestWarnModeAgreesWithHelmController makes live edits of a release in
// drift detection mode warn, forces a reconcile, and holds the detection
// to helm-controller's own: its Drifted condition names the same objects
// with the same additions, changes and removals as Drift.Message, or, when
// the detection finds nothing, says there is no drift. Each case also
// says which fields it expects, so a detection that agreed with
// helm-controller by finding the wrong fields would fail.
func TestWarnModeAgreesWithHelmController(t *testing.T) {
	replicas := func(g Gomega, r *rel) {
		r.edit(g, r.deployment(), func(u map[string]any) { set(g, u, int64(5), "spec", "replicas") })
	}
	greeting := func(g Gomega, r *rel) {
		r.edit(g, r.configMap(), func(u map[string]any) { set(g, u, "hotfix", "data", "greeting") })
	}
	tests := []struct {
		name   string
		ignore []helmv2.IgnoreRule
		edit   func(g Gomega, r *rel)
		// fields are the drifted fields expected, "<ChangeType> <pointer>",
		// by object: "<Kind>/<name without the release's prefix>".
		fields map[string][]string
		// excluded are the exclusions expected besides the chart's own.
		excluded map[string]Exclusion
	}{
		{name: "change-key", edit: greeting,
			fields: map[string][]string{"ConfigMap/-settings": {"Update /data/greeting"}}},
		{name: "add-key", // a key the chart does not render is not drift
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.configMap(), func(u map[string]any) { set(g, u, "by-alice", "data", "added") })
			}},
		{name: "scale", edit: replicas, fields: map[string][]string{"Deployment/": {"Update /spec/replicas"}}},
		{name: "remove-key",
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.configMap(), func(u map[string]any) { unstructured.RemoveNestedField(u, "data", "mode") })
			},
			fields: map[string][]string{"ConfigMap/-settings": {"Remove /data/mode"}}},
		{name: "remove-label",
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.deployment(), func(u map[string]any) { unstructured.RemoveNestedField(u, "metadata", "labels", "tier") })
			},
			fields: map[string][]string{"Deployment/": {"Remove /metadata/labels/tier"}}},
		{name: "ignored", // the replicas edit is under a rule; the color edit is not
			ignore: []helmv2.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomize.Selector{Kind: "Deployment"}}},
			edit: func(g Gomega, r *rel) {
				replicas(g, r)
				r.edit(g, r.configMap(), func(u map[string]any) { set(g, u, "red", "data", "color") })
			},
			fields: map[string][]string{"ConfigMap/-settings": {"Update /data/color"}}},
		{name: "every-key", // helm-controller folds three changes into one of /data
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.configMap(), func(u map[string]any) {
					set(g, u, map[string]any{"greeting": "hotfix", "color": "red", "mode": "maintenance"}, "data")
				})
			},
			fields: map[string][]string{"ConfigMap/-settings": {"Update /data/color", "Update /data/greeting", "Update /data/mode"}}},
		{name: "image-and-secret",
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.deployment(), func(u map[string]any) {
					containers, _, _ := unstructured.NestedSlice(u, "spec", "template", "spec", "containers")
					containers[0].(map[string]any)["image"] = "registry.invalid/reflux/drift:hotfix"
					set(g, u, containers, "spec", "template", "spec", "containers")
				})
				r.edit(g, r.secret(), func(u map[string]any) { set(g, u, "aG90Zml4", "data", "password") })
			},
			fields: map[string][]string{
				"Deployment/":         {"Update /spec/template/spec/containers/0/image"},
				"Secret/-credentials": {"Update /data/password"},
			}},
		{name: "held", // reflux's hold: helm-controller excludes the object, reflux still sees its drift
			edit: func(g Gomega, r *rel) {
				r.hold(g, r.configMap())
				greeting(g, r)
				replicas(g, r)
			},
			fields:   map[string][]string{"ConfigMap/-settings": {"Update /data/greeting"}, "Deployment/": {"Update /spec/replicas"}},
			excluded: map[string]Exclusion{"ConfigMap/-settings": HeldByReflux}},
		{name: "excluded-live", // a person's exclusion: skipped by both
			edit: func(g Gomega, r *rel) {
				r.edit(g, r.configMap(), func(u map[string]any) {
					set(g, u, "disabled", "metadata", "annotations", helmv2.DriftDetectionMetadataKey)
					set(g, u, "hotfix", "data", "greeting")
				})
				replicas(g, r)
			},
			fields:   map[string][]string{"Deployment/": {"Update /spec/replicas"}},
			excluded: map[string]Exclusion{"ConfigMap/-settings": ExcludedLive}},
		{name: "deleted",
			edit: func(g Gomega, r *rel) {
				g.Expect(r.env.Client.Delete(context.Background(), r.configMap())).To(Succeed())
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			r := install(t, "warn-"+tt.name, helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn, Ignore: tt.ignore})
			tt.edit(g, r)
			r.reconcile(g)
			got := r.detect(g)

			g.Expect(fieldsByObject(r, got)).To(Equal(orEmpty(tt.fields)), "the fields the edit drifted")
			g.Expect(exclusions(r, got)).To(Equal(withChartExclusion(tt.excluded)))
			expectMasked(g, got)
			if tt.name == "deleted" {
				g.Expect(missing(r, got)).To(Equal([]string{"ConfigMap/-settings"}))
			}

			helm := r.drifted(g)
			if !got.Changed() {
				g.Expect(helm).To(Equal(noDrift), "helm-controller finds no drift either")
				return
			}
			g.Expect(helm).To(HavePrefix("True/DriftDetected: "))
			message := strings.TrimPrefix(helm, "True/DriftDetected: ")
			g.Expect(summaries(message)).To(Equal(summaries(got.Message())), "object for object, the same counts")
			g.Expect(got.Message()).To(Equal(message), "and in helm-controller's order")
		})
	}
}

// fieldsByObject lists each object's fields as "<ChangeType> <pointer>",
// keyed as the cases key them; objects without fields are left out.
// Every field it lists must name its writer, unless live lacks it.
func fieldsByObject(r *rel, d Drift) map[string][]string {
	out := map[string][]string{}
	for _, o := range d.Objects {
		for _, f := range o.Fields {
			k := shortName(r, o.Desired)
			desc := string(f.ChangeType) + " " + f.Pointer
			if f.ChangeType != "Remove" && (f.Modifier == nil || f.Modifier.Manager != editor) {
				desc += fmt.Sprintf(" (writer %v, want %s)", f.Modifier, editor)
			}
			out[k] = append(out[k], desc)
		}
	}
	return out
}

func shortName(r *rel, obj *unstructured.Unstructured) string {
	return obj.GetKind() + "/" + strings.TrimPrefix(obj.GetName(), r.name)
}

// exclusions lists the objects excluded from helm-controller's detection.
func exclusions(r *rel, d Drift) map[string]Exclusion {
	out := map[string]Exclusion{}
	for _, o := range d.Objects {
		if o.Excluded != NotExcluded {
			out[shortName(r, o.Desired)] = o.Excluded
		}
	}
	return out
}

func missing(r *rel, d Drift) []string {
	var out []string
	for _, o := range d.Objects {
		if o.Missing {
			out = append(out, shortName(r, o.Desired))
		}
	}
	return out
}

// withChartExclusion adds the object the chart itself excludes.
func withChartExclusion(m map[string]Exclusion) map[string]Exclusion {
	out := map[string]Exclusion{"ConfigMap/-unwatched": ExcludedByChart}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func orEmpty(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}

// summaries maps a DriftDetected message's object lines by object.
func summaries(message string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(message, "\n")
	for _, l := range lines[1:] {
		name, rest, _ := strings.Cut(l, " ")
		out[name] = rest
	}
	return out
}

// expectMasked checks that no Secret value reaches a field in clear.
func expectMasked(g Gomega, d Drift) {
	for _, o := range d.Objects {
		if !isSecret(o.Desired) {
			continue
		}
		for _, f := range o.Fields {
			for _, v := range []string{f.GitValue, f.LiveValue} {
				g.Expect(v).To(Or(BeEmpty(), HavePrefix(`"***`)), "%s of %s", f.Pointer, o.Desired.GetName())
			}
		}
	}
}
