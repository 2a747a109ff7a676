package classify

import (
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func boolPtr(b bool) *bool { return &b }

func TestBuiltinDefaults(t *testing.T) {
	c, err := New(&refluxv1.ReverseSyncPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		field    Field
		action   refluxv1.Action
		severity refluxv1.Severity
		rule     string
	}{
		{"a declared object deleted live",
			Field{Kind: "ConfigMap", Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeRemove},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:object-deleted"},
		{"a declared Secret written live, content not read",
			Field{Kind: "Secret", Pointer: refluxv1.WholeObjectPointer, ChangeType: refluxv1.ChangeUpdate},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:content-not-read"},
		{"new configmap key merges",
			Field{Kind: "ConfigMap", Pointer: "/data/NEW_FLAG", ChangeType: refluxv1.ChangeAdd, LiveValue: "on"},
			refluxv1.MergeAction, refluxv1.SeverityLow, "default:configmap-new-key"},
		{"changed configmap key is not a new key",
			Field{Kind: "ConfigMap", Pointer: "/data/FLAG", ChangeType: refluxv1.ChangeUpdate, GitValue: "a", LiveValue: "b"},
			refluxv1.AlertAction, refluxv1.SeverityMedium, "default:unmatched"},
		{"deployment image",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/image", ChangeType: refluxv1.ChangeUpdate},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:image"},
		{"cronjob init container image",
			Field{Kind: "CronJob", Pointer: "/spec/jobTemplate/spec/template/spec/initContainers/1/image", ChangeType: refluxv1.ChangeUpdate},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:image"},
		{"an annotation named image is not an image",
			Field{Kind: "Deployment", Pointer: "/metadata/annotations/image", ChangeType: refluxv1.ChangeAdd},
			refluxv1.AlertAction, refluxv1.SeverityMedium, "default:unmatched"},
		{"pod securityContext",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/securityContext/runAsNonRoot", ChangeType: refluxv1.ChangeUpdate},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:security-context"},
		{"container securityContext",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/securityContext/privileged", ChangeType: refluxv1.ChangeAdd},
			refluxv1.AlertAction, refluxv1.SeverityHigh, "default:security-context"},
		{"limit raised exactly 4x is critical",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/resources/limits/memory",
				ChangeType: refluxv1.ChangeUpdate, GitValue: "256Mi", LiveValue: "1Gi"},
			refluxv1.AlertAction, refluxv1.SeverityCritical, "default:resources"},
		{"cpu request in other units 4x is critical",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/resources/requests/cpu",
				ChangeType: refluxv1.ChangeUpdate, GitValue: "250m", LiveValue: "1"},
			refluxv1.AlertAction, refluxv1.SeverityCritical, "default:resources"},
		{"limit raised 3x is not critical",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/resources/limits/memory",
				ChangeType: refluxv1.ChangeUpdate, GitValue: "256Mi", LiveValue: "768Mi"},
			refluxv1.AlertAction, refluxv1.SeverityMedium, "default:unmatched"},
		{"unparseable quantity is not critical",
			Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/resources/limits/cpu",
				ChangeType: refluxv1.ChangeUpdate, GitValue: "lots", LiveValue: "4"},
			refluxv1.AlertAction, refluxv1.SeverityMedium, "default:unmatched"},
		{"replicas",
			Field{Kind: "Deployment", Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, GitValue: float64(2), LiveValue: float64(5)},
			refluxv1.AlertAction, refluxv1.SeverityLow, "default:replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := c.Classify(tt.field)
			g.Expect(d.Action).To(Equal(tt.action))
			g.Expect(d.Severity).To(Equal(tt.severity))
			g.Expect(d.Rule).To(Equal(tt.rule))
			// Every default holds, but a deleted object has nothing to
			// hold, and a Secret reflux may not read is never patched.
			g.Expect(d.Hold).To(Equal(tt.rule != "default:object-deleted" && tt.rule != "default:content-not-read"))
		})
	}
}

func TestRulesInOrder(t *testing.T) {
	g := NewWithT(t)
	c, err := New(&refluxv1.ReverseSyncPolicySpec{
		Defaults: refluxv1.Defaults{ResourceFactor: 2},
		Rules: []refluxv1.Rule{
			{Name: "flags", Paths: []string{"apps/*/flags.yaml"}, Kinds: []string{"ConfigMap"}, Fields: []string{"/data/*"},
				Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow},
			{Fields: []string{"/metadata/annotations/*"}, Action: refluxv1.IgnoreAction, Hold: boolPtr(false)},
			{Kinds: []string{"ConfigMap"}, ChangeTypes: []refluxv1.ChangeType{refluxv1.ChangeRemove}, Action: refluxv1.AlertAction,
				Severity: refluxv1.SeverityHigh},
		},
	})
	g.Expect(err).ToNot(HaveOccurred())

	d := c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, OriginFile: "apps/web/flags.yaml"})
	g.Expect(d).To(Equal(Decision{Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, Rule: "flags", Hold: true}))

	// The glob is over the origin file: another file falls through.
	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, OriginFile: "apps/web/other.yaml"})
	g.Expect(d.Rule).To(Equal("default:unmatched"))

	// A chart's field matches by its HelmRelease's file too: the values
	// line may be in an overlay's patch, or only the chart's defaults set
	// it (issue 19 §7).
	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, OriginFile: "apps/web/values.yaml",
		OwnerFile: "apps/web/flags.yaml"})
	g.Expect(d.Rule).To(Equal("flags"))
	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, OwnerFile: "apps/web/flags.yaml"})
	g.Expect(d.Rule).To(Equal("flags"))
	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeUpdate, OriginFile: "apps/web/values.yaml",
		OwnerFile: "apps/web/release.yaml"})
	g.Expect(d.Rule).To(Equal("default:unmatched"))

	// A field without a known origin never matches a path rule.
	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/X", ChangeType: refluxv1.ChangeAdd})
	g.Expect(d.Rule).To(Equal("default:configmap-new-key"))

	d = c.Classify(Field{Kind: "Service", Pointer: "/metadata/annotations/team", ChangeType: refluxv1.ChangeAdd})
	g.Expect(d).To(Equal(Decision{Action: refluxv1.IgnoreAction, Severity: refluxv1.SeverityMedium, Rule: "rules[1]", Hold: false}))

	// "*" is one segment, never two.
	d = c.Classify(Field{Kind: "Service", Pointer: "/metadata/annotations/a/b", ChangeType: refluxv1.ChangeAdd})
	g.Expect(d.Rule).To(Equal("default:unmatched"))

	d = c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/GONE", ChangeType: refluxv1.ChangeRemove})
	g.Expect(d.Rule).To(Equal("rules[2]"))
	g.Expect(d.Severity).To(Equal(refluxv1.SeverityHigh))

	// The policy's factor replaces the default 4x.
	d = c.Classify(Field{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/resources/limits/cpu",
		ChangeType: refluxv1.ChangeUpdate, GitValue: "1", LiveValue: "2"})
	g.Expect(d.Severity).To(Equal(refluxv1.SeverityCritical))
}

func TestEscapedPointerSegments(t *testing.T) {
	g := NewWithT(t)
	c, err := New(&refluxv1.ReverseSyncPolicySpec{Rules: []refluxv1.Rule{
		{Fields: []string{"/metadata/annotations/example.com~1owner"}, Action: refluxv1.IgnoreAction},
	}})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.Classify(Field{Pointer: "/metadata/annotations/example.com~1owner"}).Action).To(Equal(refluxv1.IgnoreAction))
	g.Expect(c.Classify(Field{Pointer: "/metadata/annotations/example.com/owner"}).Action).To(Equal(refluxv1.AlertAction))
}

func TestDisabledDefaults(t *testing.T) {
	g := NewWithT(t)
	c, err := New(&refluxv1.ReverseSyncPolicySpec{Defaults: refluxv1.Defaults{Disabled: true}})
	g.Expect(err).ToNot(HaveOccurred())
	d := c.Classify(Field{Kind: "ConfigMap", Pointer: "/data/NEW", ChangeType: refluxv1.ChangeAdd})
	g.Expect(d.Action).To(Equal(refluxv1.AlertAction))
	g.Expect(d.Rule).To(Equal("default:unmatched"))
}

// TestHoldMode checks that spec.hold: Never clears every hold, from a rule,
// the built-in defaults or the disabled defaults, and changes nothing else.
func TestHoldMode(t *testing.T) {
	rules := []refluxv1.Rule{{Name: "flags", Kinds: []string{"ConfigMap"}, Fields: []string{"/data/*"}, Action: refluxv1.MergeAction}}
	fields := []Field{
		{Kind: "ConfigMap", Pointer: "/data/NEW", ChangeType: refluxv1.ChangeAdd},
		{Kind: "Deployment", Pointer: "/spec/template/spec/containers/0/image", ChangeType: refluxv1.ChangeUpdate},
	}
	tests := []struct {
		name     string
		spec     refluxv1.ReverseSyncPolicySpec
		wantHold bool
	}{
		{"unset holds as the rules say", refluxv1.ReverseSyncPolicySpec{Rules: rules}, true},
		{"Rules holds as the rules say", refluxv1.ReverseSyncPolicySpec{Rules: rules, Hold: refluxv1.HoldRules}, true},
		{"Never overrides rules and defaults", refluxv1.ReverseSyncPolicySpec{Rules: rules, Hold: refluxv1.HoldNever}, false},
		{"Never overrides disabled defaults", refluxv1.ReverseSyncPolicySpec{Hold: refluxv1.HoldNever, Defaults: refluxv1.Defaults{Disabled: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := New(&tt.spec)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(c.MayHold()).To(Equal(tt.wantHold))
			rulesOnly, err := New(&refluxv1.ReverseSyncPolicySpec{Rules: tt.spec.Rules, Defaults: tt.spec.Defaults})
			g.Expect(err).ToNot(HaveOccurred())
			for _, f := range fields {
				d, base := c.Classify(f), rulesOnly.Classify(f)
				g.Expect(d.Hold).To(Equal(tt.wantHold), "hold of %s", f.Pointer)
				base.Hold = d.Hold
				g.Expect(d).To(Equal(base), "only the hold differs for %s", f.Pointer)
			}
		})
	}
}

func TestManualHotfix(t *testing.T) {
	g := NewWithT(t)
	c, err := New(&refluxv1.ReverseSyncPolicySpec{})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.IsManualHotfix(map[string]string{"ops.source": "manual"})).To(BeTrue())
	g.Expect(c.IsManualHotfix(map[string]string{"ops.source": "ci"})).To(BeFalse())
	g.Expect(c.IsManualHotfix(nil)).To(BeFalse())

	c, err = New(&refluxv1.ReverseSyncPolicySpec{ManualHotfix: refluxv1.ManualHotfix{Key: "example.com/hotfix", Value: "yes"}})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(c.IsManualHotfix(map[string]string{"example.com/hotfix": "yes"})).To(BeTrue())
	g.Expect(c.IsManualHotfix(map[string]string{"ops.source": "manual"})).To(BeFalse())
}

func TestNewRejectsBadGlob(t *testing.T) {
	g := NewWithT(t)
	_, err := New(&refluxv1.ReverseSyncPolicySpec{Rules: []refluxv1.Rule{{Paths: []string{"[x-"}, Action: refluxv1.MergeAction}}})
	g.Expect(err).To(MatchError(ContainSubstring("spec.rules[0].paths[0]")))
}

func TestRanks(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MaxSeverity(refluxv1.SeverityLow, refluxv1.SeverityCritical)).To(Equal(refluxv1.SeverityCritical))
	g.Expect(MaxSeverity(refluxv1.SeverityHigh, refluxv1.SeverityMedium)).To(Equal(refluxv1.SeverityHigh))
	g.Expect(MaxSeverity("", refluxv1.SeverityLow)).To(Equal(refluxv1.SeverityLow))
	g.Expect(StrongestAction(refluxv1.IgnoreAction, refluxv1.MergeAction)).To(Equal(refluxv1.MergeAction))
	g.Expect(StrongestAction(refluxv1.AlertAction, refluxv1.IgnoreAction)).To(Equal(refluxv1.AlertAction))
}
