package proposals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/record"
)

// Checkout returns a work tree of branch; the caller cleans it up.
type Checkout func(branch string) (dir string, err error)

// Input is one Kustomization's records and repository.
type Input struct {
	// Kustomization renders the trees, as Flux does.
	Kustomization *kustomizev1.Kustomization
	// Records are the Kustomization's Drift records.
	Records []refluxv1.Drift
	// Branches are reflux's branches of the Kustomization that exist.
	Branches []string
	// Source is the branch Flux applies.
	Source string
	// Checkout checks a branch out.
	Checkout Checkout
}

// Check returns every way the records and the branches disagree, joined;
// nil when they agree.
func Check(ctx context.Context, in Input) error {
	var errs []error
	on := map[string][]refluxv1.Drift{}
	for _, r := range in.Records {
		switch {
		case r.Status.State == refluxv1.DriftProposed:
			on[r.Status.Branch] = append(on[r.Status.Branch], r)
		case record.IsOpen(&r) && r.Status.Commit != "":
			errs = append(errs, fmt.Errorf("record %s names pushed branch %s but is %s", r.Name, r.Status.Branch, r.Status.State))
		}
	}
	exists := map[string]bool{}
	for _, b := range in.Branches {
		exists[b] = true
		if len(on[b]) == 0 {
			errs = append(errs, fmt.Errorf("branch %s exists, and no Proposed record is on it", b))
		}
	}
	if len(on) > 0 {
		base, err := render(ctx, in, in.Source)
		if err != nil {
			return err
		}
		for _, b := range sortedBranches(on) {
			if !exists[b] {
				errs = append(errs, fmt.Errorf("records %v are Proposed on %s, which does not exist", names(on[b]), b))
				continue
			}
			errs = append(errs, checkBranch(ctx, in, base, b, on[b]))
		}
	}
	return errors.Join(errs...)
}

// checkBranch compares one branch's render with the source's.
func checkBranch(ctx context.Context, in Input, base map[string]*unstructured.Unstructured, branch string, recs []refluxv1.Drift) error {
	head, err := render(ctx, in, branch)
	if err != nil {
		return err
	}
	var errs []error
	claimed := map[string]bool{}
	for _, r := range recs {
		for _, f := range written(r.Spec.Fields) {
			key, ptr, carried, err := inGit(r, f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !carried {
				continue
			}
			obj := head[key]
			claimed[key+ptr] = true
			got, found := lookup(obj, ptr)
			if r.Spec.HelmRelease != nil && f.Origin.Kind == "computed" {
				// The key makes only a part of the field: Git's value with
				// the live part in its place.
				was, _ := lookup(base[key], ptr)
				var git, live string
				_ = json.Unmarshal([]byte(f.GitValue), &git)
				_ = json.Unmarshal([]byte(f.LiveValue), &live)
				if want, ok := chart.SpliceValue(git, live, was); !ok || !found || !jsonptr.Equal(got, want) {
					errs = append(errs, fmt.Errorf("%s is Proposed on %s, which has %s %s = %v, not what makes the live %s from %v",
						r.Name, branch, key, ptr, got, f.LiveValue, was))
				}
				continue
			}
			switch {
			case f.ChangeType == refluxv1.ChangeRemove && found:
				errs = append(errs, fmt.Errorf("%s is Proposed on %s, which still has %s %s", r.Name, branch, key, ptr))
			case f.ChangeType != refluxv1.ChangeRemove && (!found || !jsonptr.Matches(got, f.LiveValue)):
				errs = append(errs, fmt.Errorf("%s is Proposed on %s, which has %s %s = %v, not the live %s", r.Name, branch, key, ptr, got, f.LiveValue))
			}
		}
	}
	for _, d := range diff(base, head) {
		if !isClaimed(claimed, d) {
			errs = append(errs, fmt.Errorf("branch %s changes %s, which no Proposed record on it names", branch, d))
		}
	}
	return errors.Join(errs...)
}

// inGit is where a branch carries a record's field: the rendered object
// itself, or, for an object a Helm chart rendered, the HelmRelease's
// spec.values key that sets it. A chart's field no single key sets is
// not carried: write-back refuses it.
func inGit(r refluxv1.Drift, f refluxv1.DriftField) (key, ptr string, carried bool, err error) {
	hr := r.Spec.HelmRelease
	if hr == nil {
		return objectKey(r.Spec.Object.Kind, r.Spec.Object.Namespace, r.Spec.Object.Name), f.Pointer, true, nil
	}
	if f.Origin == nil || len(f.Origin.ValuesKeys) != 1 {
		return "", "", false, nil
	}
	vp, err := chart.KeyPointer(f.Origin.ValuesKeys[0])
	if err != nil {
		return "", "", false, fmt.Errorf("record %s: %w", r.Name, err)
	}
	return objectKey("HelmRelease", hr.Namespace, hr.Name), "/spec/values" + vp, true, nil
}

// isClaimed reports whether a difference is a claimed field, or holds one
// (a list that grew differs as a whole), or lies inside one.
func isClaimed(claimed map[string]bool, d string) bool {
	for c := range claimed {
		if c == d || strings.HasPrefix(c, d+"/") || strings.HasPrefix(d, c+"/") {
			return true
		}
	}
	return false
}

// written are the fields a branch carries: those bound for Git.
func written(fields []refluxv1.DriftField) []refluxv1.DriftField {
	var out []refluxv1.DriftField
	for _, f := range fields {
		if (f.Action == refluxv1.MergeAction || f.Action == refluxv1.AlertAction) && f.Pointer != refluxv1.WholeObjectPointer &&
			(f.Origin == nil || f.Origin.Refused == "") {
			out = append(out, f)
		}
	}
	return out
}

func lookup(obj *unstructured.Unstructured, ptr string) (any, bool) {
	if obj == nil {
		return nil, false
	}
	return jsonptr.Get(obj.Object, ptr)
}

// render builds branch's tree and indexes its objects by objectKey.
func render(ctx context.Context, in Input, branch string) (map[string]*unstructured.Unstructured, error) {
	dir, err := in.Checkout(branch)
	if err != nil {
		return nil, fmt.Errorf("checking out %s: %w", branch, err)
	}
	res, err := kustomize.Build(ctx, kustomize.BuildOptions{Root: dir, Kustomization: in.Kustomization})
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", branch, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range res.Objects {
		out[objectKey(o.GetKind(), o.GetNamespace(), o.GetName())] = o
	}
	return out, nil
}

// hashSuffix is the suffix kustomize's generators add to a name.
var hashSuffix = regexp.MustCompile(`-[a-z0-9]{10}$`)

// objectKey names an object the same in two renders, even when a
// generator's hash suffix changed with its data.
func objectKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + hashSuffix.ReplaceAllString(name, "")
}

// diff lists the leaves that differ between two renders, as
// objectKey+pointer; an object only one render has differs as a whole.
func diff(a, b map[string]*unstructured.Unstructured) []string {
	var out []string
	for k, ob := range b {
		oa, ok := a[k]
		if !ok {
			out = append(out, k)
			continue
		}
		for _, p := range leaves(oa.Object, ob.Object, "") {
			if !strings.HasPrefix(p, "/metadata/name") && !strings.HasPrefix(p, "/metadata/annotations/kustomize.toolkit.fluxcd.io") {
				out = append(out, k+p)
			}
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// leaves returns the JSON pointers of the leaves where a and b differ.
func leaves(a, b any, at string) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			out = append(out, leaves(am[k], bm[k], at+"/"+jsonptr.Escape(k))...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, leaves(al[i], bl[i], fmt.Sprintf("%s/%d", at, i))...)
		}
		return out
	}
	if fmt.Sprint(a) == fmt.Sprint(b) {
		return nil
	}
	return []string{at}
}

func sortedBranches(on map[string][]refluxv1.Drift) []string {
	out := make([]string, 0, len(on))
	for b := range on {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

func names(recs []refluxv1.Drift) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}
