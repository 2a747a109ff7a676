package release

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// field is what a test expects of one drifted field.
type fieldWant struct {
	Pointer    string
	GitPointer string
	ChangeType refluxv1.ChangeType
	Git, Live  string
	Manager    string
}

func wants(fields []Field) []fieldWant {
	out := []fieldWant{}
	for _, f := range fields {
		w := fieldWant{Pointer: f.Pointer, ChangeType: f.ChangeType, Git: f.GitValue, Live: f.LiveValue}
		if f.GitPointer != f.Pointer {
			w.GitPointer = f.GitPointer
		}
		if f.Modifier != nil {
			w.Manager = f.Modifier.Manager + "/" + f.Modifier.Operation
		}
		out = append(out, w)
	}
	return out
}

func TestCompare(t *testing.T) {
	const update, apply = metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	const cmHead = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n  namespace: apps\n"
	helmCM := owned("helm-controller", apply, 1, `{"f:data":{"f:greeting":{},"f:color":{},"f:mode":{}}}`)
	tests := []struct {
		name      string
		live, dry string
		managed   []metav1.ManagedFieldsEntry
		ignore    []string
		want      []fieldWant
		// counts are helm-controller's; nil means one per field.
		counts *Counts
	}{
		{name: "in sync", live: cmHead + "data:\n  greeting: hello\n", dry: cmHead + "data:\n  greeting: hello\n",
			managed: []metav1.ManagedFieldsEntry{helmCM}, want: []fieldWant{}},
		{name: "a changed key, blamed on its new owner",
			live: cmHead + "data:\n  greeting: hotfix\n  color: blue\n", dry: cmHead + "data:\n  greeting: hello\n  color: blue\n",
			managed: []metav1.ManagedFieldsEntry{owned("helm-controller", apply, 1, `{"f:data":{"f:color":{}}}`),
				owned("kubectl-edit", update, 5, `{"f:data":{"f:greeting":{}}}`)},
			want: []fieldWant{{"/data/greeting", "", refluxv1.ChangeUpdate, `"hello"`, `"hotfix"`, "kubectl-edit/Update"}}},
		{name: "a removed key is an addition for helm-controller, with no owner left",
			live: cmHead + "data:\n  greeting: hello\n", dry: cmHead + "data:\n  greeting: hello\n  mode: normal\n",
			managed: []metav1.ManagedFieldsEntry{helmCM},
			want:    []fieldWant{{"/data/mode", "", refluxv1.ChangeRemove, `"normal"`, "", ""}}},
		{name: "a key only live has and the dry run lacks is a removal",
			live: cmHead + "data:\n  greeting: hello\n  stale: x\n", dry: cmHead + "data:\n  greeting: hello\n",
			managed: []metav1.ManagedFieldsEntry{owned("helm-controller", apply, 1, `{"f:data":{"f:greeting":{}}}`),
				owned("legacy", update, 2, `{"f:data":{"f:stale":{}}}`)},
			want: []fieldWant{{"/data/stale", "", refluxv1.ChangeAdd, "", `"x"`, "legacy/Update"}}},
		{name: "every key changed: three fields, one rationalised change of the map for helm-controller",
			live: cmHead + "data:\n  a: \"1\"\n  b: \"2\"\n  c: \"3\"\n", dry: cmHead + "data:\n  a: x\n  b: \"y\"\n  c: z\n",
			managed: []metav1.ManagedFieldsEntry{owned("kubectl-edit", update, 5, `{"f:data":{"f:a":{},"f:b":{},"f:c":{}}}`)},
			want: []fieldWant{
				{"/data/a", "", refluxv1.ChangeUpdate, `"x"`, `"1"`, "kubectl-edit/Update"},
				{"/data/b", "", refluxv1.ChangeUpdate, `"y"`, `"2"`, "kubectl-edit/Update"},
				{"/data/c", "", refluxv1.ChangeUpdate, `"z"`, `"3"`, "kubectl-edit/Update"},
			},
			counts: &Counts{Changes: 1}},
		{name: "an ignored path is not compared",
			live: cmHead + "data:\n  greeting: hotfix\n  color: red\n", dry: cmHead + "data:\n  greeting: hello\n  color: blue\n",
			managed: []metav1.ManagedFieldsEntry{owned("kubectl-edit", update, 5, `{"f:data":{"f:greeting":{},"f:color":{}}}`)},
			ignore:  []string{"/data/greeting"},
			want:    []fieldWant{{"/data/color", "", refluxv1.ChangeUpdate, `"blue"`, `"red"`, "kubectl-edit/Update"}}},
		{name: "a label the chart sets and live lost; live's extra labels are not drift",
			live:    cmHead + "  labels:\n    added: by-controller\n",
			dry:     cmHead + "  labels:\n    added: by-controller\n    tier: web\n",
			managed: []metav1.ManagedFieldsEntry{owned("kube-controller-manager", update, 2, `{"f:metadata":{"f:labels":{"f:added":{}}}}`)},
			want:    []fieldWant{{"/metadata/labels/tier", "", refluxv1.ChangeRemove, `"web"`, "", ""}}},
		{name: "a changed annotation",
			live:    cmHead + "  annotations:\n    note: hotfix\n",
			dry:     cmHead + "  annotations:\n    note: chart\n",
			managed: []metav1.ManagedFieldsEntry{owned("kubectl-annotate", update, 3, `{"f:metadata":{"f:annotations":{"f:note":{}}}}`)},
			want:    []fieldWant{{"/metadata/annotations/note", "", refluxv1.ChangeUpdate, `"chart"`, `"hotfix"`, "kubectl-annotate/Update"}}},
		{name: "a list element's field, blamed through the keyed element, most recent writer first",
			live: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n  template:\n    spec:\n      containers:\n      - name: app\n        image: web:hotfix\n",
			dry:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: app\n        image: web:1\n",
			managed: []metav1.ManagedFieldsEntry{
				owned("helm-controller", apply, 1, `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{}}}}}}}`),
				owned("kubectl-set", update, 4, `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`),
				owned("kubectl-edit", update, 3, `{"f:spec":{"f:replicas":{}}}`),
				owned("autoscaler", update, 2, `{"f:spec":{"f:replicas":{}}}`),
			},
			want: []fieldWant{
				{"/spec/replicas", "", refluxv1.ChangeUpdate, "2", "5", "kubectl-edit/Update"},
				{"/spec/template/spec/containers/0/image", "", refluxv1.ChangeUpdate, `"web:1"`, `"web:hotfix"`, "kubectl-set/Update"},
			},
			counts: &Counts{Changes: 1}}, // so small that all of /spec is replaced
		{name: "Secret values are masked",
			live:    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\ndata:\n  password: aG90Zml4\n  extra: eA==\n",
			dry:     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\ndata:\n  password: czNjcmV0\n  extra: eA==\n  token: dA==\n",
			managed: []metav1.ManagedFieldsEntry{owned("kubectl-edit", update, 3, `{"f:data":{"f:password":{}}}`)},
			want: []fieldWant{
				{"/data/password", "", refluxv1.ChangeUpdate, `"*** (after)"`, `"*** (before)"`, "kubectl-edit/Update"},
				{"/data/token", "", refluxv1.ChangeRemove, `"***"`, "", ""},
			},
			counts: &Counts{Changes: 1}},
		{name: "a list longer live: removals from its end",
			live:    cmHead + "spec:\n  items: [a, b, c, d, e, f, g, h]\n",
			dry:     cmHead + "spec:\n  items: [a, b, c, d, e, f]\n",
			managed: []metav1.ManagedFieldsEntry{owned("legacy", update, 2, `{"f:spec":{"f:items":{}}}`)},
			want: []fieldWant{
				{"/spec/items/6", "/spec/items/-", refluxv1.ChangeAdd, "", `"g"`, "legacy/Update"},
				{"/spec/items/7", "/spec/items/-", refluxv1.ChangeAdd, "", `"h"`, "legacy/Update"},
			},
			counts: &Counts{Changes: 1}}, // the list replaced whole is shorter
		{name: "a list shorter live: the elements it lacks, numbered as in Git",
			live:    cmHead + "spec:\n  items: [a, b, c, d, e, f]\n",
			dry:     cmHead + "spec:\n  items: [a, b, c, d, e, f, g, h]\n",
			managed: []metav1.ManagedFieldsEntry{owned("helm-controller", apply, 2, `{"f:spec":{"f:items":{}}}`)},
			want: []fieldWant{
				{"/spec/items/6", "", refluxv1.ChangeRemove, `"g"`, "", ""},
				{"/spec/items/7", "", refluxv1.ChangeRemove, `"h"`, "", ""},
			},
			counts: &Counts{Changes: 1}},
		{name: "a changed element of a list of the same length",
			live:    cmHead + "spec:\n  items: [a, b, c, d, e, x]\n",
			dry:     cmHead + "spec:\n  items: [a, b, c, d, e, f]\n",
			managed: []metav1.ManagedFieldsEntry{owned("legacy", update, 2, `{"f:spec":{"f:items":{}}}`)},
			want:    []fieldWant{{"/spec/items/5", "", refluxv1.ChangeUpdate, `"f"`, `"x"`, "legacy/Update"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			live := withManaged(obj(t, tt.live), tt.managed...)
			dry := obj(t, tt.dry)
			liveBefore, dryBefore := live.DeepCopy(), dry.DeepCopy()
			in := Input{Desired: obj(t, tt.dry), Live: live, IgnorePaths: tt.ignore}
			for _, reverts := range []bool{true, false} {
				fields, counts, err := compare(in, dry.DeepCopy(), reverts)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(wants(fields)).To(Equal(tt.want))
				if tt.counts != nil {
					g.Expect(counts).To(Equal(*tt.counts))
				} else {
					g.Expect(counts).To(Equal(countFields(fields)), "nothing folded: one operation per field")
				}
				for _, f := range fields {
					g.Expect(f.FluxReverts).To(Equal(reverts), f.Pointer)
				}
			}
			g.Expect(live).To(Equal(liveBefore), "the live object is not modified")
			g.Expect(dry).To(Equal(dryBefore))
		})
	}
}

// TestCompareDoesNotMaskOtherKinds: only a core Secret's data is masked.
func TestCompareDoesNotMaskOtherKinds(t *testing.T) {
	g := NewWithT(t)
	for _, apiVersion := range []string{"v1", "example.com/v1"} {
		kind := "ConfigMap"
		if apiVersion != "v1" {
			kind = "Secret"
		}
		head := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: c\n"
		in := Input{Desired: obj(t, head+"data:\n  k: new\n"), Live: obj(t, head+"data:\n  k: old\n")}
		fields, _, err := compare(in, obj(t, head+"data:\n  k: new\n"), false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(wants(fields)).To(Equal([]fieldWant{{"/data/k", "", refluxv1.ChangeUpdate, `"new"`, `"old"`, ""}}), kind)
	}
}

// countFields counts fields by change type, in helm-controller's terms.
func countFields(fields []Field) Counts {
	var c Counts
	for _, f := range fields {
		switch f.ChangeType {
		case refluxv1.ChangeRemove:
			c.Additions++
		case refluxv1.ChangeUpdate:
			c.Changes++
		case refluxv1.ChangeAdd:
			c.Removals++
		}
	}
	return c
}
