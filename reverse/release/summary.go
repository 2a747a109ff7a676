package release

import (
	"fmt"
	"strings"
)

// Counts are one object's drift as helm-controller counts it, by
// operation of its JSON patch from live to what it applies. They are
// Result.Fields counted by change type unless helm-controller's patch
// folded small changes into one (see Result.Counts).
type Counts struct {
	// Additions are "add" operations: fields live lacks (ChangeRemove).
	Additions int
	// Changes are "replace" operations (ChangeUpdate).
	Changes int
	// Removals are "remove" operations: fields live has and the dry run
	// does not (ChangeAdd).
	Removals int
}

// Changed reports whether helm-controller counts the object as drifted
// (a "create" or "update" diff): it is missing, or diffed with fields.
// An object reflux holds is excluded for helm-controller, whatever its
// fields.
func (r Result) Changed() bool {
	return r.Excluded == NotExcluded && (r.Missing || len(r.Fields) > 0)
}

// Summary is the object's line in helm-controller's DriftDetected message
// (SummarizeDiffSet in its internal/diff): "<Kind>/<ns>/<name> excluded",
// "... removed" or "... changed (a additions, c changes, r removals)";
// "" for an object in sync, which the message leaves out.
func (o ObjectDrift) Summary() string {
	name := describe(o.Desired)
	switch {
	case o.Excluded != NotExcluded:
		return name + " excluded"
	case o.Missing:
		return name + " removed"
	case len(o.Fields) > 0:
		c := o.Counts
		return fmt.Sprintf("%s changed (%d additions, %d changes, %d removals)", name, c.Additions, c.Changes, c.Removals)
	}
	return ""
}

// Changed reports whether helm-controller finds the release drifted
// (DiffSet.HasChanges): some object is missing or changed. Only then does
// it report, and in enabled mode correct.
func (d Drift) Changed() bool {
	for _, o := range d.Objects {
		if o.Changed() {
			return true
		}
	}
	return false
}

// Message is helm-controller's DriftDetected message (event and Drifted
// condition) for this drift, "" when it finds none. helm-controller
// writes it only in warn and enabled modes.
func (d Drift) Message() string {
	if !d.Changed() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster state of release %s has drifted from the desired state:", d.Release)
	for _, o := range d.Objects {
		if s := o.Summary(); s != "" {
			b.WriteString("\n" + s)
		}
	}
	return b.String()
}
