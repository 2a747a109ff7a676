package classify

import (
	"fmt"
	"path"
	"strings"
	"time"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// Field is one drifted field as the classifier sees it.
type Field struct {
	// Kind of the drifted object, such as Deployment.
	Kind string
	// Pointer is the JSON pointer of the field in the rendered object.
	Pointer string
	// ChangeType says how the live value diverges from Git.
	ChangeType refluxv1.ChangeType
	// GitValue and LiveValue are the decoded JSON values; nil when absent.
	GitValue, LiveValue any
	// OriginFile is the source file that declares the field, relative to
	// the repository root; empty when unknown.
	OriginFile string
	// OwnerFile is the file that declares, in Git, the object the field
	// is rendered from when that is another object: a chart's object's
	// HelmRelease (issue 19 §7). A rule's paths match it as well as
	// OriginFile, so a rule over a release's file covers what its chart
	// renders, even a field only the chart's defaults set.
	OwnerFile string
}

// Decision is the classification of one field.
type Decision struct {
	Action   refluxv1.Action
	Severity refluxv1.Severity
	// Rule names the rule that matched: its name, or "rules[i]"; for a
	// built-in default, "default:<case>".
	Rule string
	// Hold keeps Flux from reverting the object while the drift is open.
	Hold bool
	// HoldFor bounds how long the hold may stand; 0 is no limit.
	HoldFor time.Duration
}

// Classifier applies one policy. It is immutable and safe for concurrent use.
type Classifier struct {
	rules    []rule
	defaults refluxv1.Defaults
	hotfix   refluxv1.ManualHotfix
	// neverHold is spec.hold: Never, which overrides every rule.
	neverHold bool
}

type rule struct {
	name     string
	paths    []string
	kinds    map[string]bool
	fields   [][]string
	changes  map[refluxv1.ChangeType]bool
	action   refluxv1.Action
	severity refluxv1.Severity
	hold     bool
	holdFor  time.Duration
}

// New compiles a policy spec into a Classifier.
func New(spec *refluxv1.ReverseSyncPolicySpec) (*Classifier, error) {
	c := &Classifier{defaults: spec.Defaults, hotfix: spec.ManualHotfix, neverHold: spec.Hold == refluxv1.HoldNever}
	if c.defaults.ResourceFactor == 0 {
		c.defaults.ResourceFactor = 4
	}
	if c.hotfix.Key == "" {
		c.hotfix.Key = refluxv1.DefaultManualHotfixKey
		c.hotfix.Value = refluxv1.DefaultManualHotfixValue
	}
	for i, r := range spec.Rules {
		compiled, err := compile(i, r)
		if err != nil {
			return nil, err
		}
		c.rules = append(c.rules, compiled)
	}
	return c, nil
}

func compile(i int, r refluxv1.Rule) (rule, error) {
	out := rule{name: r.Name, paths: r.Paths, action: r.Action, severity: r.Severity, hold: true}
	if out.name == "" {
		out.name = fmt.Sprintf("rules[%d]", i)
	}
	if out.severity == "" {
		out.severity = refluxv1.SeverityMedium
	}
	if r.Hold != nil {
		out.hold = *r.Hold
	}
	if r.HoldFor != nil {
		out.holdFor = r.HoldFor.Duration
	}
	for j, glob := range r.Paths {
		if _, err := path.Match(glob, ""); err != nil {
			return rule{}, fmt.Errorf("spec.rules[%d].paths[%d] %q: %w", i, j, glob, err)
		}
	}
	if len(r.Kinds) > 0 {
		out.kinds = make(map[string]bool, len(r.Kinds))
		for _, k := range r.Kinds {
			out.kinds[k] = true
		}
	}
	for _, f := range r.Fields {
		out.fields = append(out.fields, segments(f))
	}
	if len(r.ChangeTypes) > 0 {
		out.changes = make(map[refluxv1.ChangeType]bool, len(r.ChangeTypes))
		for _, ct := range r.ChangeTypes {
			out.changes[ct] = true
		}
	}
	return out, nil
}

// IsManualHotfix reports whether a live object's annotations mark it as a
// manual hotfix: logged and held, never written to Git.
func (c *Classifier) IsManualHotfix(annotations map[string]string) bool {
	v, ok := annotations[c.hotfix.Key]
	return ok && v == c.hotfix.Value
}

// MayHold reports whether the policy lets anything be held: false for
// spec.hold: Never, which no rule and no manual hotfix overrides.
func (c *Classifier) MayHold() bool { return !c.neverHold }

// HotfixAnnotation is the annotation that marks a manual hotfix.
func (c *Classifier) HotfixAnnotation() (key, value string) {
	return c.hotfix.Key, c.hotfix.Value
}

// HotfixFrom reports whether an audited writer declares a manual hotfix:
// the user is in the policy's manualHotfix.fromUsers, or one of its groups
// in fromGroups. It returns the entry that matched, `user:NAME` or
// `group:NAME`; users are checked first, then groups in the order the
// audit event lists them. Matching is exact: a break-glass list is an
// allow-list, and a glob there would widen it silently.
func (c *Classifier) HotfixFrom(user string, groups []string) (string, bool) {
	if user == "" {
		return "", false
	}
	for _, u := range c.hotfix.FromUsers {
		if u == user {
			return "user:" + u, true
		}
	}
	for _, g := range groups {
		for _, want := range c.hotfix.FromGroups {
			if g == want {
				return "group:" + g, true
			}
		}
	}
	return "", false
}

// AuditIntent reports whether the policy declares hotfixes from the audit
// log at all (fromUsers or fromGroups).
func (c *Classifier) AuditIntent() bool {
	return len(c.hotfix.FromUsers) > 0 || len(c.hotfix.FromGroups) > 0
}

// HotfixMaxAge bounds how long a manual hotfix is held; 0 is no limit.
func (c *Classifier) HotfixMaxAge() time.Duration {
	if c.hotfix.MaxAge == nil {
		return 0
	}
	return c.hotfix.MaxAge.Duration
}

// Classify returns the decision for one field: the first matching rule, or
// else the built-in defaults. Hold is never set under spec.hold: Never.
func (c *Classifier) Classify(f Field) Decision {
	d := c.classify(f)
	d.Hold = d.Hold && c.MayHold()
	return d
}

func (c *Classifier) classify(f Field) Decision {
	for _, r := range c.rules {
		if r.matches(f) {
			return Decision{Action: r.action, Severity: r.severity, Rule: r.name, Hold: r.hold, HoldFor: r.holdFor}
		}
	}
	if c.defaults.Disabled {
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium, Rule: "default:unmatched", Hold: true}
	}
	return c.builtin(f)
}

func (r rule) matches(f Field) bool {
	if r.kinds != nil && !r.kinds[f.Kind] {
		return false
	}
	if r.changes != nil && !r.changes[f.ChangeType] {
		return false
	}
	if len(r.paths) > 0 && !anyGlob(r.paths, f.OriginFile) && !anyGlob(r.paths, f.OwnerFile) {
		return false
	}
	if len(r.fields) > 0 {
		ptr := segments(f.Pointer)
		for _, pattern := range r.fields {
			if matchPointer(pattern, ptr) {
				return true
			}
		}
		return false
	}
	return true
}

func anyGlob(globs []string, file string) bool {
	if file == "" {
		return false
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, file); ok {
			return true
		}
	}
	return false
}

// segments splits a JSON pointer into its raw (still escaped) tokens.
// Comparing escaped tokens is exact, because escaping is a bijection.
func segments(pointer string) []string {
	return strings.Split(strings.TrimPrefix(pointer, "/"), "/")
}

// matchPointer matches a pointer against a pattern in which "*" stands for
// exactly one segment.
func matchPointer(pattern, pointer []string) bool {
	if len(pattern) != len(pointer) {
		return false
	}
	for i := range pattern {
		if pattern[i] != "*" && pattern[i] != pointer[i] {
			return false
		}
	}
	return true
}
