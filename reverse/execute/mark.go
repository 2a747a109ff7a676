package execute

import (
	"context"

	"github.com/reflux-dev/reflux/reverse/decide"
)

// mark adds the manual-hotfix annotation a decision asks for, and takes
// off the one a closing record's audit-derived hotfix put on, under
// reflux's field manager (issue 11). Once it is in, the annotation itself
// makes the object a hotfix, so the next evaluation asks for nothing.
func (x *Executor) mark(ctx context.Context, p *Plan, d decide.Decision) error {
	m := x.opts.Marker
	if m == nil {
		return nil
	}
	if len(d.Unmark) > 0 {
		if err := m.Unmark(ctx, p.Object, d.Unmark); err != nil {
			return err
		}
		x.opts.Log.Info("audit-derived manual hotfix closed: annotation removed", "record", p.Name,
			"object", p.object(), "annotations", d.Unmark)
	}
	if len(d.Mark) == 0 {
		return nil
	}
	if err := m.Mark(ctx, p.Object, d.Mark); err != nil {
		return err
	}
	x.opts.Log.Info("manual hotfix declared by the audit log: object annotated", "record", p.Name,
		"object", p.object(), "annotations", d.Mark)
	return nil
}
