package branches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	gogit "github.com/go-git/go-git/v5"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/edit"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
	"github.com/reflux-dev/reflux/reverse/writeback/sops"
)

// editor applies a branch's fields to a worktree. The write-back engine may
// call apply on the source head, on reflux's existing branch, or again
// after a rebase, so it converges: a field Git already holds is skipped.
type editor struct {
	// ctx is the write-back's: a cancelled run stops rendering too.
	ctx         context.Context
	set         reverse.DriftSet
	fields      []fieldRef
	allowShared bool
	recipients  sops.Recipients
	refused     []refusal
	// render builds trees, counted by the Writer; nil is kustomize.Build.
	render func(context.Context, kustomize.BuildOptions) (*kustomize.Result, error)
	// values verifies the values changes of fields a chart rendered.
	values ValuesVerifier
}

// ErrGitChanged means Git changed a drifted field since the drift was
// seen: a human must decide, so nothing is written.
var ErrGitChanged = errors.New("the field changed in Git since the drift was seen")

func (e *editor) apply(dir string) ([]string, error) {
	ctx := e.ctx
	e.refused = nil
	opts := kustomize.BuildOptions{Root: dir, Kustomization: e.set.Spec, SubstituteFrom: e.set.SubstituteFrom}
	if r := e.set.Render; r != nil {
		// Built as the render it is compared with, managed-by label and all.
		opts.ManagedByVersion = r.FluxVersion
	}
	changed := map[string]bool{}
	plain, secrets := splitSecrets(e.fields)
	if err := e.applySecrets(ctx, dir, opts, secrets, changed); err != nil {
		return nil, err
	}
	eopts := edit.Options{Build: opts, AllowSharedFiles: e.allowShared, Render: e.render}
	before, err := e.before(ctx, dir, eopts, len(changed) > 0)
	if err != nil {
		return nil, err
	}
	changes, fields, err := e.changes(before, plain)
	if err != nil {
		return nil, err
	}
	if len(changes) > 0 {
		if err := e.planSet(ctx, dir, eopts, before, changes, fields, changed); err != nil {
			return nil, err
		}
	}
	if len(changed) == 0 && len(e.refused) > 0 {
		return nil, fmt.Errorf("no field could be written: %s", describe(e.refused))
	}
	out := make([]string, 0, len(changed))
	for p := range changed {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// before is the tree's render before the edits. When the worktree is the
// commit Flux applied and nothing was written yet, it is the applied
// revision's render itself, so a write-back attempt builds only to verify;
// otherwise (the source moved, an encrypted Secret was rewritten) it is
// rendered once.
func (e *editor) before(ctx context.Context, dir string, opts edit.Options, written bool) (*edit.Before, error) {
	r := e.set.Render
	if !written && r != nil && r.Built != nil && r.Index != nil && r.IndexErr == nil && worktreeAt(dir, r.Revision) {
		root, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		built := *r.Built
		built.Root = root // the same tree, checked out here
		return &edit.Before{Result: &built, Index: r.Index}, nil
	}
	before, err := edit.NewBefore(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("rendering the source tree: %w", err)
	}
	return before, nil
}

// worktreeAt reports whether the worktree at dir has the commit a Flux
// revision ("main@sha1:<hash>") names checked out.
func worktreeAt(dir, revision string) bool {
	_, hash, ok := strings.Cut(revision, "@sha1:")
	if !ok {
		return false
	}
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		return false
	}
	head, err := repo.Head()
	return err == nil && head.Hash().String() == hash
}

// changes builds the edits for fields, from the render before them: a
// field Git already holds is skipped, and one Git changed since the drift
// was seen stops the run, for a human to decide.
func (e *editor) changes(before *edit.Before, plain []fieldRef) ([]edit.Change, []fieldRef, error) {
	var changes []edit.Change
	var fields []fieldRef
	for _, f := range plain {
		ch, err := change(f)
		if err == nil && valuesFrom(f) {
			ch, err = valuesFromChange(before, f, ch.Value)
		}
		if err != nil {
			e.refused = append(e.refused, refusal{fieldRef: f, reason: err.Error()})
			continue
		}
		current, found, err := before.Value(ch)
		if err != nil {
			return nil, nil, fmt.Errorf("finding %s in the render: %w", ch.Object, err)
		}
		if spliced(f) {
			// The key holds a part of the field: its new value is the
			// live field's text in that part's place, from the key's
			// value in Git now; one Git changed no longer makes the
			// recorded value, and is refused.
			v, ok := spliceValue(f, current, found)
			if !ok {
				e.refused = append(e.refused, refusal{fieldRef: f, reason: fmt.Sprintf(
					"%s is %v in Git, which does not make the recorded %s", f.field.Origin.ValuesKeys[0], current, f.field.GitValue)})
				continue
			}
			ch.Value = v
			changes = append(changes, ch)
			fields = append(fields, f)
			continue
		}
		if addsDefault(f) && !found {
			// Git sets no such key yet, as when the drift was seen: the
			// chart's default made the recorded value.
			changes = append(changes, ch)
			fields = append(fields, f)
			continue
		}
		if ch.HeldBy(current, found) {
			continue // Git already holds it
		}
		if f.field.GitValue != "" && !jsonptr.Matches(current, f.field.GitValue) {
			return nil, nil, fmt.Errorf("%w: %s %s is %v in Git now, the drift was recorded against %s",
				ErrGitChanged, ch.Object, ch.Pointer, current, f.field.GitValue)
		}
		changes = append(changes, ch)
		fields = append(fields, f)
	}
	return e.verifyValues(changes, fields)
}

// verifyValues renders each HelmRelease's chart with the values changes
// of its fields: a change the chart does not turn into exactly the live
// edits is refused, with what the render showed, and so is every other
// change of that HelmRelease, since they verify only together.
func (e *editor) verifyValues(changes []edit.Change, fields []fieldRef) ([]edit.Change, []fieldRef, error) {
	type release struct {
		set  []chart.Setting
		want []chart.Wanted
	}
	byRelease := map[types.NamespacedName]*release{}
	var order []types.NamespacedName
	for i, f := range fields {
		hr := f.record.Spec.HelmRelease
		if hr == nil {
			continue
		}
		id := types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}
		r, ok := byRelease[id]
		if !ok {
			r = &release{}
			byRelease[id] = r
			order = append(order, id)
		}
		live, err := scalar(f.field.LiveValue)
		if err != nil {
			return nil, nil, err // change(f) decoded it already
		}
		o := f.record.Spec.Object
		r.set = append(r.set, chart.Setting{Key: f.field.Origin.ValuesKeys[0], Value: changes[i].Value})
		r.want = append(r.want, chart.Wanted{Object: chart.ObjectKey{APIVersion: o.APIVersion, Kind: o.Kind,
			Namespace: o.Namespace, Name: o.Name}, Pointer: f.field.Pointer, Value: live})
	}
	refused := map[types.NamespacedName]string{}
	for _, id := range order {
		if e.values == nil {
			refused[id] = "the chart cannot be rendered to verify the values change: helm-controller's CRDs were not installed when reflux started"
			continue
		}
		r := byRelease[id]
		err := e.values.VerifyValues(e.ctx, id, r.set, r.want)
		switch {
		case err == nil:
		case errors.Is(err, chart.ErrUnverified), errors.Is(err, chart.ErrRender), errors.Is(err, chart.ErrValues):
			refused[id] = err.Error()
		default:
			return nil, nil, fmt.Errorf("verifying the values change of HelmRelease %s: %w", id, err)
		}
	}
	if len(refused) == 0 {
		return changes, fields, nil
	}
	var keep []edit.Change
	var keepFields []fieldRef
	for i, f := range fields {
		if hr := f.record.Spec.HelmRelease; hr != nil {
			if why, ok := refused[types.NamespacedName{Namespace: hr.Namespace, Name: hr.Name}]; ok {
				e.refused = append(e.refused, refusal{fieldRef: f, reason: why})
				continue
			}
		}
		keep, keepFields = append(keep, changes[i]), append(keepFields, f)
	}
	return keep, keepFields, nil
}

// planSet plans and verifies every change at once and writes the plan.
func (e *editor) planSet(ctx context.Context, dir string, opts edit.Options, before *edit.Before, changes []edit.Change,
	fields []fieldRef, changed map[string]bool) error {
	res, err := edit.PlanSet(ctx, opts, before, changes)
	if err != nil && hasRemoval(changes) {
		// A removal that brings back a value declared underneath (a base
		// the patch overrode), or that the build does not take, fails the
		// set's re-render: refuse the removals with what the render said,
		// and write the rest, rather than fail the whole set every retry.
		var keep []edit.Change
		var keepFields []fieldRef
		for i, ch := range changes {
			if ch.Remove {
				e.refused = append(e.refused, refusal{fieldRef: fields[i],
					reason: "removing it does not leave the render without it: " + err.Error()})
				continue
			}
			keep, keepFields = append(keep, ch), append(keepFields, fields[i])
		}
		if len(keep) == 0 {
			return nil
		}
		changes, fields = keep, keepFields
		res, err = edit.PlanSet(ctx, opts, before, changes)
	}
	if err != nil {
		return fmt.Errorf("editing %d field(s): %w", len(changes), err)
	}
	for _, r := range res.Refused {
		if !errors.Is(r.Err, edit.ErrUnsupported) && !errors.Is(r.Err, edit.ErrShared) {
			return fmt.Errorf("editing %s %s: %w", r.Change.Object, r.Change.Pointer, r.Err)
		}
		e.refused = append(e.refused, refusal{fieldRef: fields[r.Index], reason: r.Err.Error()})
	}
	if err := res.Write(dir); err != nil {
		return fmt.Errorf("writing the edits: %w", err)
	}
	for path := range res.Files {
		changed[path] = true
	}
	return nil
}

func hasRemoval(changes []edit.Change) bool {
	for _, ch := range changes {
		if ch.Remove {
			return true
		}
	}
	return false
}

// change builds the edit for a field from its record: the live value as
// the record saw it, never a fresh read of the live object.
func change(f fieldRef) (edit.Change, error) {
	o := f.record.Spec.Object
	group := ""
	if i := strings.Index(o.APIVersion, "/"); i >= 0 {
		group = o.APIVersion[:i]
	}
	ref := origin.ObjectRef{Group: group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
	if f.field.ChangeType == refluxv1.ChangeRemove {
		// Removed live: the minimal deletion at the field's origin.
		return edit.Change{Object: ref, Pointer: f.field.Pointer, Remove: true}, nil
	}
	v, err := scalar(f.field.LiveValue)
	if err != nil {
		return edit.Change{}, err
	}
	if hr := f.record.Spec.HelmRelease; hr != nil {
		return valuesChange(hr, f.field, v)
	}
	return edit.Change{Object: ref, Pointer: f.field.Pointer, Value: v}, nil
}

// spliced reports whether f is a chart's field its values key makes only
// a part of (chart.Spliced): an image's tag.
func spliced(f fieldRef) bool {
	return f.record.Spec.HelmRelease != nil && f.field.Origin != nil && f.field.Origin.Kind == string(chart.KindComputed)
}

// valuesFrom reports whether f is a chart's field whose values key a file
// that spec.valuesFrom takes sets.
func valuesFrom(f fieldRef) bool {
	return f.record.Spec.HelmRelease != nil && f.field.Origin != nil && f.field.Origin.Kind == string(chart.KindValuesFrom)
}

// valuesFromChange is the edit of f's values key, to v, in the file its
// origin names: a change within the data value of the ConfigMap the tree
// generates from that file, in the HelmRelease's namespace, so that the
// key's line changes and the rest of the file is kept. A Secret's file is
// not written: its values would be written in the clear.
func valuesFromChange(before *edit.Before, f fieldRef, v any) (edit.Change, error) {
	o, hr := f.field.Origin, f.record.Spec.HelmRelease
	ptr, err := chart.KeyPointer(o.ValuesKeys[0])
	if err != nil {
		return edit.Change{}, err
	}
	for _, u := range before.Result.Objects {
		kind := u.GetKind()
		if (kind != "ConfigMap" && kind != "Secret") || u.GetNamespace() != hr.Namespace {
			continue
		}
		data, _ := u.Object["data"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(data)) {
			ref, key := origin.RefOf(u), "/data/"+jsonptr.Escape(k)
			if g, err := before.Index.Lookup(ref, key); err != nil || g.Kind != origin.KindGeneratorFile || g.File != o.File {
				continue
			}
			if kind == "Secret" {
				return edit.Change{}, fmt.Errorf("the values key %s is set in %s, which the tree makes into a Secret: its values are not written to Git",
					o.ValuesKeys[0], o.File)
			}
			return edit.Change{Object: ref, Pointer: key, Within: ptr, Value: v}, nil
		}
	}
	return edit.Change{}, fmt.Errorf("the values key %s is set in %s:%d, which no ConfigMap of namespace %s is generated from in this tree",
		o.ValuesKeys[0], o.File, o.Line, hr.Namespace)
}

// addsDefault reports whether f is a chart's field only the chart's
// values.yaml sets, which its change adds under spec.values (split lets
// it through only when the policy says so).
func addsDefault(f fieldRef) bool {
	return f.record.Spec.HelmRelease != nil && f.field.Origin != nil && f.field.Origin.Refused == string(chart.KindChartDefault)
}

// spliceValue is the value f's key needs, given its value in Git now, for
// the chart to render the live field.
func spliceValue(f fieldRef, current any, found bool) (any, bool) {
	var git, live string
	if !found || json.Unmarshal([]byte(f.field.GitValue), &git) != nil || json.Unmarshal([]byte(f.field.LiveValue), &live) != nil {
		return nil, false
	}
	return chart.SpliceValue(git, live, current)
}

// valuesChange is the edit for a field a chart rendered: its values key,
// under the HelmRelease's spec.values, takes the live value: a key that
// passes its value through unchanged (helmUnwritable). For a key that
// makes only a part of the field, changes replaces v with that part.
func valuesChange(hr *refluxv1.HelmReleaseRef, f refluxv1.DriftField, v any) (edit.Change, error) {
	ptr, err := chart.KeyPointer(f.Origin.ValuesKeys[0])
	if err != nil {
		return edit.Change{}, err
	}
	ref := origin.ObjectRef{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind, Namespace: hr.Namespace, Name: hr.Name}
	return edit.Change{Object: ref, Pointer: "/spec/values" + ptr, Value: v}, nil
}

// scalar decodes a recorded JSON value into what kustomize/edit takes.
func scalar(text string) (interface{}, error) {
	var v interface{}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("recorded value %q is not JSON: %w", text, err)
	}
	switch t := v.(type) {
	case string, bool:
		return t, nil
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t), nil
		}
		return t, nil
	default:
		return nil, fmt.Errorf("only scalar values are written back, the recorded value is %s", text)
	}
}
