package evaluate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/decide"
)

// Pending is what is known of a live change no render can evaluate yet,
// for decide.Pending: the writer, named by the audit log when it already
// has the write, and the fields it holds. It makes no request and reads
// no render, so the live path records the change at once.
func (e *Evaluator) Pending(g *reverse.Governed, live *unstructured.Unstructured, rec *refluxv1.Drift, obj refluxv1.ObjectRef,
	name string, hold bool) (decide.PendingInput, error) {
	writer, written, err := e.opts.Detector.Written(live)
	if err != nil {
		return decide.PendingInput{}, fmt.Errorf("reading the writers of %s: %w", name, err)
	}
	if writer != nil && e.opts.Attributor != nil && writer.Time != nil {
		if who := e.opts.Attributor.User(live, writer.Manager, writer.Time.Time); who.User != "" {
			writer.User, writer.Groups = who.User, who.Groups
		}
	}
	return decide.PendingInput{Name: name, Record: rec, Live: LiveState(live), Kustomization: g.Ref(), Policy: g.Policy.Name,
		Object: obj, Writer: writer, Written: written, Hold: hold, Now: e.opts.Now()}, nil
}
