package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/classify"
)

// Origin finds where the source declares the field at ptr (numbered as in
// the rendered object). A field the source does not declare, such as a key
// a human added, gets the document that declares its nearest declared
// parent: the file a glob rule matches and an edit goes into.
func Origin(idx *origin.Index, ref origin.ObjectRef, ptr string) *refluxv1.FieldOrigin {
	if idx == nil {
		return nil
	}
	o, err := idx.Lookup(ref, ptr)
	if err == nil {
		return &refluxv1.FieldOrigin{File: o.File, Line: int32(o.Line), Column: int32(o.Column), Kind: string(o.Kind)}
	}
	var refused *origin.RefusedError
	if errors.As(err, &refused) {
		fo := &refluxv1.FieldOrigin{Refused: string(refused.Reason), Why: refused.Reason.Why()}
		if refused.Edit != nil {
			fo.EditAt = refused.Edit.Position()
		}
		return fo
	}
	fields, ferr := idx.Fields(ref)
	if ferr != nil {
		return nil
	}
	for parent := parentPointer(ptr); parent != ""; parent = parentPointer(parent) {
		for _, f := range fields {
			if f.Refused == "" && strings.HasPrefix(f.Pointer, parent+"/") {
				// The line and column of a sibling would mislead; the file
				// and the kind of declaration are what is known.
				return &refluxv1.FieldOrigin{File: f.Origin.File, Kind: string(f.Origin.Kind)}
			}
		}
	}
	return nil
}

func parentPointer(ptr string) string {
	i := strings.LastIndex(ptr, "/")
	if i <= 0 {
		return ""
	}
	return ptr[:i]
}

// Hold is whether an object's fields ask for a hold, and for how long.
type Hold struct {
	// Hold is true when a field's rule (or a declared manual hotfix) holds
	// it and Flux would revert it.
	Hold bool
	// For bounds the hold; 0 is no limit. A manual hotfix is bounded by
	// the policy's manualHotfix.maxAge; otherwise the shortest holdFor of
	// the rules that hold a field bounds it, so that no rule's hold stands
	// longer than that rule allows. Rules without holdFor do not bound it.
	For time.Duration
}

// Classify decides action, severity and rule for each field of an object
// of kind, in place. It returns whether any field asks for a hold: a rule
// (or a declared manual hotfix) holds it, and Flux would revert it.
// ownerFile is classify.Field's OwnerFile, "" for an object Git declares
// itself.
func Classify(c *classify.Classifier, kind, ownerFile string, fields []refluxv1.DriftField, hotfix bool) Hold {
	var out Hold
	for i := range fields {
		f := &fields[i]
		file := ""
		if f.Origin != nil {
			file = f.Origin.File
		}
		d := c.Classify(classify.Field{
			Kind: kind, Pointer: f.Pointer, ChangeType: f.ChangeType,
			GitValue: decode(f.GitValue), LiveValue: decode(f.LiveValue), OriginFile: file, OwnerFile: ownerFile,
		})
		f.Action, f.Severity, f.Rule = d.Action, d.Severity, d.Rule
		if hotfix {
			// A declared manual hotfix is logged and held (unless the
			// policy never holds), never written.
			f.Action, f.Rule = refluxv1.IgnoreAction, "manual-hotfix"
			d.Hold, d.HoldFor = c.MayHold(), c.HotfixMaxAge()
		}
		// Holding only matters where Flux would undo the change.
		if d.Hold && f.FluxReverts {
			out.Hold = true
			if d.HoldFor > 0 && (out.For == 0 || d.HoldFor < out.For) {
				out.For = d.HoldFor
			}
		}
	}
	return out
}

func decode(s string) any {
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// IgnorePaths returns the Kustomization's spec.ignore paths that apply to
// obj, as kustomize-controller compiles them for drift detection.
func IgnorePaths(ks *kustomizev1.Kustomization, obj *unstructured.Unstructured) []string {
	var paths []string
	for _, rule := range ks.Spec.Ignore {
		if rule.Target != nil {
			sel, err := jsondiff.NewSelectorRegex(&jsondiff.Selector{
				Group: rule.Target.Group, Version: rule.Target.Version, Kind: rule.Target.Kind,
				Name: rule.Target.Name, Namespace: rule.Target.Namespace,
				AnnotationSelector: rule.Target.AnnotationSelector, LabelSelector: rule.Target.LabelSelector,
			})
			if err != nil || !sel.MatchUnstructured(obj) {
				continue
			}
		}
		paths = append(paths, rule.Paths...)
	}
	return paths
}

// ValuesAnchor is where a key a HelmRelease's spec.values does not set
// would be added, FILE:LINE: beside the first key spec.values sets, or,
// without spec.values, beside the first field of spec. hr is the
// HelmRelease as the index knows it. The index has positions of leaves,
// not of the mappings that hold them. "" when the index knows neither.
func ValuesAnchor(idx *origin.Index, hr origin.ObjectRef) string {
	return FirstLine(idx, hr, "/spec/values/", "/spec/")
}

// FirstLine is FILE:LINE of the first leaf of hr, in the index idx, under
// the first of prefixes that has one; "" when none has.
func FirstLine(idx *origin.Index, hr origin.ObjectRef, prefixes ...string) string {
	if idx == nil {
		return ""
	}
	fields, err := idx.Fields(hr)
	if err != nil {
		return ""
	}
	for _, prefix := range prefixes {
		var first *origin.Origin
		for i := range fields {
			f := &fields[i]
			if f.Refused != "" || !strings.HasPrefix(f.Pointer, prefix) || f.Origin.Line == 0 {
				continue
			}
			if first == nil || f.Origin.File == first.File && f.Origin.Line < first.Line {
				first = &f.Origin
			}
		}
		if first != nil {
			return fmt.Sprintf("%s:%d", first.File, first.Line)
		}
	}
	return ""
}

// DeclaringFile is the file that declares the object ref in the tree idx
// indexes (the file its kind is in); "" when it is not known.
func DeclaringFile(idx *origin.Index, ref origin.ObjectRef) string {
	if o := Origin(idx, ref, "/kind"); o != nil && o.Refused == "" {
		return o.File
	}
	return ""
}
