package branches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/edit"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse"
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
}

// ErrGitChanged means Git changed a drifted field since the drift was
// seen: a human must decide, so nothing is written.
var ErrGitChanged = errors.New("the field changed in Git since the drift was seen")

func (e *editor) apply(dir string) ([]string, error) {
	ctx := e.ctx
	e.refused = nil
	opts := kustomize.BuildOptions{Root: dir, Kustomization: e.set.Spec}
	changed := map[string]bool{}
	plain, secrets := splitSecrets(e.fields)
	if err := e.applySecrets(ctx, dir, opts, secrets, changed); err != nil {
		return nil, err
	}
	for _, f := range plain {
		ch, err := change(f)
		if err != nil {
			e.refused = append(e.refused, refusal{fieldRef: f, reason: err.Error()})
			continue
		}
		current, err := renderedValue(ctx, opts, ch)
		if err != nil {
			return nil, err
		}
		if sameValue(current, ch.Value) {
			continue // Git already holds it
		}
		if f.field.GitValue != "" && !jsonptr.Matches(current, f.field.GitValue) {
			return nil, fmt.Errorf("%w: %s %s is %v in Git now, the drift was recorded against %s",
				ErrGitChanged, ch.Object, ch.Pointer, current, f.field.GitValue)
		}
		res, err := edit.Plan(ctx, edit.Options{Build: opts, AllowSharedFiles: e.allowShared}, ch)
		if errors.Is(err, edit.ErrUnsupported) || errors.Is(err, edit.ErrShared) {
			e.refused = append(e.refused, refusal{fieldRef: f, reason: err.Error()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("editing %s %s: %w", ch.Object, ch.Pointer, err)
		}
		if err := res.Write(dir); err != nil {
			return nil, fmt.Errorf("writing edit of %s %s: %w", ch.Object, ch.Pointer, err)
		}
		for path := range res.Files {
			changed[path] = true
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

// change builds the edit for a field from its record: the live value as
// the record saw it, never a fresh read of the live object.
func change(f fieldRef) (edit.Change, error) {
	o := f.record.Spec.Object
	group := ""
	if i := strings.Index(o.APIVersion, "/"); i >= 0 {
		group = o.APIVersion[:i]
	}
	v, err := scalar(f.field.LiveValue)
	if err != nil {
		return edit.Change{}, err
	}
	return edit.Change{
		Object:  origin.ObjectRef{Group: group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name},
		Pointer: f.field.Pointer, Value: v,
	}, nil
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

// renderedValue renders the tree and returns the value at the change's
// pointer, nil when absent.
func renderedValue(ctx context.Context, opts kustomize.BuildOptions, ch edit.Change) (interface{}, error) {
	idx, res, err := origin.Build(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("rendering the source tree: %w", err)
	}
	ref, err := idx.Resolve(ch.Object)
	if err != nil {
		return nil, fmt.Errorf("finding %s in the render: %w", ch.Object, err)
	}
	for _, obj := range res.Objects {
		if origin.RefOf(obj) == ref {
			v, _ := jsonptr.Get(obj.Object, ch.Pointer)
			return v, nil
		}
	}
	return nil, fmt.Errorf("%s is not in the render", ref)
}

func sameValue(a, b interface{}) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb interface{}
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
