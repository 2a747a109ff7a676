package release

import (
	"context"
	"sort"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/jsonptr"
)

// TestEnabledModeRevertsWhatIsPredicted makes live edits of a release in
// drift detection mode enabled, with one object held by reflux and one
// path under an ignore rule, and lets helm-controller correct them. What
// the detection predicted it would revert (RevertedAt AtReconcile) is
// exactly what it reverted: detecting again finds only the held object's
// fields, with the same live values, and each reverted field is back at
// its GitValue. helm-controller's own DriftDetected message before the
// correction is the detection's, and its DriftCorrected event names
// exactly the objects predicted.
func TestEnabledModeRevertsWhatIsPredicted(t *testing.T) {
	g := NewWithT(t)
	r := install(t, "enabled", helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled,
		Ignore: []helmv2.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomize.Selector{Kind: "Deployment"}}}})
	r.hold(g, r.secret())
	r.edit(g, r.secret(), func(u map[string]any) { set(g, u, "aG90Zml4", "data", "password") })
	r.edit(g, r.configMap(), func(u map[string]any) {
		set(g, u, "hotfix", "data", "greeting")
		set(g, u, "by-alice", "data", "added")
		unstructured.RemoveNestedField(u, "data", "mode")
	})
	r.edit(g, r.deployment(), func(u map[string]any) {
		set(g, u, int64(5), "spec", "replicas")
		unstructured.RemoveNestedField(u, "metadata", "labels", "tier")
	})

	before := r.detect(g)
	var reverted, kept []ObjectDrift
	for _, o := range before.Objects {
		switch {
		case len(o.Fields) == 0:
		case o.RevertedAt == AtReconcile:
			reverted = append(reverted, o)
		default:
			kept = append(kept, o)
		}
	}
	g.Expect(names(desiredOf(reverted))).To(ConsistOf("ConfigMap/enabled-settings", "Deployment/enabled"))
	g.Expect(names(desiredOf(kept))).To(ConsistOf("Secret/enabled-credentials"))
	g.Expect(kept[0].Excluded).To(Equal(HeldByReflux))

	r.reconcile(g)
	g.Expect(r.drifted(g)).To(Equal(noDrift))
	g.Expect(r.hr.Status.History.Latest().Version).To(Equal(1), "a correction, not an upgrade")
	g.Expect(r.event(g, helmv2.DriftDetectedReason)).To(Equal(before.Message()))
	g.Expect(correctedObjects(r.event(g, "DriftCorrected"))).To(Equal(summaryNames(reverted)))

	after := r.detect(g)
	g.Expect(identities(after)).To(Equal(identities(Drift{Objects: kept})), "only the held object's drift is left")
	for _, o := range reverted {
		live := get(g, r, o.Desired)
		for _, f := range o.Fields {
			v, ok := jsonptr.Get(live.Object, f.Pointer)
			g.Expect(ok).To(BeTrue(), f.Pointer)
			g.Expect(jsonptr.Matches(v, f.GitValue)).To(BeTrue(), "%s is back at %s, is %v", f.Pointer, f.GitValue, v)
		}
	}
	cm := get(g, r, r.configMap())
	g.Expect(cm.Object["data"]).To(HaveKeyWithValue("added", "by-alice"), "a key the chart does not render is not drift")
	deploy := get(g, r, r.deployment())
	g.Expect(deploy.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 5)), "ignored")
}

// identity is what must survive helm-controller's correction of a field.
type identity struct{ Object, Pointer, ChangeType, LiveValue string }

func identities(d Drift) []identity {
	out := []identity{}
	for _, o := range d.Objects {
		for _, f := range o.Fields {
			out = append(out, identity{describe(o.Desired), f.Pointer, string(f.ChangeType), f.LiveValue})
		}
	}
	return out
}

func desiredOf(objs []ObjectDrift) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Desired)
	}
	return out
}

// summaryNames names objects as helm-controller's messages do, sorted.
func summaryNames(objs []ObjectDrift) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, describe(o.Desired))
	}
	sort.Strings(out)
	return out
}

// correctedObjects reads the objects a DriftCorrected message names
// ("<Kind>/<ns>/<name> configured" lines), sorted.
func correctedObjects(message string) []string {
	out := []string{}
	for _, l := range strings.Split(message, "\n")[1:] {
		if name, ok := strings.CutSuffix(l, " configured"); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func get(g Gomega, r *rel, like *unstructured.Unstructured) *unstructured.Unstructured {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(like.GroupVersionKind())
	g.Expect(r.env.Client.Get(context.Background(), client.ObjectKeyFromObject(like), live)).To(Succeed())
	return live
}

// event waits for helm-controller's event of reason on the HelmRelease
// and returns its message.
func (r *rel) event(g Gomega, reason string) string {
	var message string
	g.Eventually(func(g Gomega) {
		list := &corev1.EventList{}
		g.Expect(r.env.Client.List(context.Background(), list, client.InNamespace(r.name))).To(Succeed())
		var found []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == helmv2.HelmReleaseKind && e.InvolvedObject.Name == r.name && e.Reason == reason {
				found = append(found, e.Message)
			}
		}
		g.Expect(found).To(HaveLen(1), "one %s event", reason)
		message = found[0]
	}, timeout, interval).Should(Succeed())
	return message
}
