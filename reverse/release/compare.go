package release

import (
	"encoding/json"
	"fmt"
	"sort"

	ssajsondiff "github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// compare diffs live with the dry run as helm-controller does. It
// returns helm-controller's counts, from its own patch, and the fields,
// one for each operation of the same comparison without rationalisation:
// helm-controller's Rationalize option folds the changes of a small map or
// list into one replacement of the whole value when that is shorter
// (wI2L/jsondiff), which counts as helm-controller counts but names no
// field. Where nothing is folded the two agree operation for operation.
func compare(in Input, dry *unstructured.Unstructured, reverts bool) ([]Field, Counts, error) {
	live := in.Live.DeepCopy()
	if len(in.IgnorePaths) > 0 {
		// helm-controller removes ignored paths from both sides first.
		remove := ssajsondiff.GenerateRemovePatch(in.IgnorePaths...)
		if err := ssajsondiff.ApplyPatchToUnstructured(live, remove); err != nil {
			return nil, Counts{}, fmt.Errorf("removing ignore paths %q from live: %w", in.IgnorePaths, err)
		}
		if err := ssajsondiff.ApplyPatchToUnstructured(dry, remove); err != nil {
			return nil, Counts{}, fmt.Errorf("removing ignore paths %q from dry run: %w", in.IgnorePaths, err)
		}
	}
	helm, err := helmPatch(live, dry, jsondiff.Rationalize())
	if err != nil {
		return nil, Counts{}, err
	}
	patch, err := helmPatch(live, dry)
	if err != nil {
		return nil, Counts{}, err
	}
	own, err := ownersOf(live)
	if err != nil {
		return nil, Counts{}, err
	}
	if isSecret(in.Desired) {
		patch = maskSecret(patch)
	}
	at := locate(patch, live.Object)
	fields := make([]Field, 0, len(patch))
	for i, op := range patch {
		f, err := field(op, at[i], reverts)
		if err != nil {
			return nil, Counts{}, err
		}
		f.Modifier = own.blame(f.Pointer, f.ChangeType)
		fields = append(fields, f)
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
	return fields, count(helm), nil
}

// count counts a patch as helm-controller's summary does (summarizeUpdate
// in its internal/diff).
func count(patch jsondiff.Patch) Counts {
	var c Counts
	for _, op := range patch {
		switch op.Type {
		case jsondiff.OperationAdd:
			c.Additions++
		case jsondiff.OperationReplace:
			c.Changes++
		case jsondiff.OperationRemove:
			c.Removals++
		}
	}
	return c
}

// helmPatch returns the JSON patch helm-controller's diff computes from
// live to its dry-run result dry, after both are filtered of ignored
// paths (jsondiff.Unstructured in fluxcd/pkg/ssa; helm-controller passes
// jsondiff.Rationalize as opts): the labels and annotations the dry run
// adds or changes, then everything but metadata and status. Labels and
// annotations only live has are not drift: core controllers add them.
func helmPatch(live, dry *unstructured.Unstructured, opts ...jsondiff.Option) (jsondiff.Patch, error) {
	meta, err := jsondiff.Compare(labelsAndAnnotations(live), labelsAndAnnotations(dry), opts...)
	if err != nil {
		return nil, fmt.Errorf("comparing labels and annotations: %w", err)
	}
	var patch jsondiff.Patch
	for _, op := range meta {
		if op.Type == jsondiff.OperationAdd || op.Type == jsondiff.OperationReplace {
			patch = append(patch, op)
		}
	}
	rest, err := ssajsondiff.DiffUnstructured(live, dry, opts...)
	if err != nil {
		return nil, err
	}
	return append(patch, rest...), nil
}

// labelsAndAnnotations copies what helm-controller's diff compares of
// metadata, with the name kept so that an "add" of missing labels is not
// an "add" of all metadata (diffUnstructuredMetadata in fluxcd/pkg/ssa).
func labelsAndAnnotations(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	for _, k := range []string{"name", "annotations", "labels"} {
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "metadata", k); ok {
			_ = unstructured.SetNestedField(out.Object, v, "metadata", k)
		}
	}
	return out
}

// field turns one patch operation, which takes live to what
// helm-controller applies, into a drifted field.
func field(op jsondiff.Operation, at located, reverts bool) (Field, error) {
	f := Field{Pointer: at.pointer, GitPointer: at.gitPointer, FluxReverts: reverts}
	var git, live any
	switch op.Type {
	case jsondiff.OperationReplace:
		f.ChangeType, git, live = refluxv1.ChangeUpdate, op.Value, op.OldValue
	case jsondiff.OperationAdd:
		f.ChangeType, git = refluxv1.ChangeRemove, op.Value
	case jsondiff.OperationRemove:
		f.ChangeType, live = refluxv1.ChangeAdd, op.OldValue
	default:
		// helm-controller's options (no Factorize, no Invertible) produce
		// no move, copy or test; one would mean the library changed.
		return Field{}, fmt.Errorf("unexpected %q operation at %s in helm-controller's patch", op.Type, op.Path)
	}
	var err error
	if f.GitValue, err = encode(git, f.ChangeType != refluxv1.ChangeAdd); err != nil {
		return Field{}, fmt.Errorf("encoding %s: %w", op.Path, err)
	}
	if f.LiveValue, err = encode(live, f.ChangeType != refluxv1.ChangeRemove); err != nil {
		return Field{}, fmt.Errorf("encoding %s: %w", op.Path, err)
	}
	return f, nil
}

// encode writes a present value as compact JSON; an absent one as "".
func encode(v any, present bool) (string, error) {
	if !present {
		return "", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
