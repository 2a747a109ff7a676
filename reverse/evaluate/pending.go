package evaluate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// Pending is what is known of a live change no render can evaluate yet,
// for decide.Pending: the writer, named by the audit log when it already
// has the write, and the fields it holds. It makes no request and reads
// no render, so the live path records the change at once.
func (e *Evaluator) Pending(g *reverse.Governed, live *unstructured.Unstructured, rec *refluxv1.Drift, obj refluxv1.ObjectRef,
	name string, hold bool) (decide.PendingInput, error) {
	var users UserNamer
	if e.opts.Attributor != nil {
		users = e.opts.Attributor
	}
	writer, written, err := WrittenBy(e.opts.Detector, users, live)
	if err != nil {
		return decide.PendingInput{}, fmt.Errorf("reading the writers of %s: %w", name, err)
	}
	return decide.PendingInput{Name: name, Record: rec, Live: LiveState(live), Kustomization: g.Ref(), Policy: g.Policy.Name,
		Object: obj, Writer: writer, Written: written, Hold: hold, Now: e.opts.Now()}, nil
}

// WrittenReader reads who last wrote a live object, from its
// managedFields (drift.Detector.Written).
type WrittenReader interface {
	Written(live *unstructured.Unstructured) (*refluxv1.Modifier, []refluxv1.WrittenField, error)
}

// UserNamer names the user behind a write from the audit log
// (Attributor.User).
type UserNamer interface {
	User(obj *unstructured.Unstructured, manager string, at time.Time) observe.Who
}

// WrittenBy is the writer of live's latest write that can be drift, and
// the fields it holds, from managedFields: nil when only writers that are
// never drift wrote it. The audit log names the user when it already has
// the write; users may be nil. It makes no request, so a change is
// written down at once whichever path keeps it.
func WrittenBy(r WrittenReader, users UserNamer, live *unstructured.Unstructured) (*refluxv1.Modifier, []refluxv1.WrittenField, error) {
	writer, written, err := r.Written(live)
	if err != nil || writer == nil {
		return nil, nil, err
	}
	if users != nil && writer.Time != nil {
		if who := users.User(live, writer.Manager, writer.Time.Time); who.User != "" {
			writer.User, writer.Groups = who.User, who.Groups
		}
	}
	return writer, written, nil
}
