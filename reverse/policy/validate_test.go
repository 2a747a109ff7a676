package policy

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		spec    refluxv1.ReverseSyncPolicySpec
		wantErr []string
	}{
		{
			name: "valid rules and template",
			spec: refluxv1.ReverseSyncPolicySpec{
				Git: refluxv1.GitSpec{CommitMessageTemplate: "reflux: {{ .Kustomization }}"},
				Rules: []refluxv1.Rule{
					{Paths: []string{"apps/*/flags.yaml", "base/[a-c]*.yaml"}, Action: refluxv1.MergeAction},
				},
			},
		},
		{
			name: "malformed glob names the field",
			spec: refluxv1.ReverseSyncPolicySpec{
				Rules: []refluxv1.Rule{
					{Kinds: []string{"ConfigMap"}, Action: refluxv1.IgnoreAction},
					{Paths: []string{"ok/*.yaml", "apps/[a-"}, Action: refluxv1.MergeAction},
				},
			},
			wantErr: []string{"spec.rules[1].paths[1]", "malformed glob"},
		},
		{
			name: "template that does not parse",
			spec: refluxv1.ReverseSyncPolicySpec{
				Git: refluxv1.GitSpec{CommitMessageTemplate: "{{ .Fields "},
			},
			wantErr: []string{"spec.git.commitMessageTemplate", "does not parse"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Validate(&tt.spec)
			if len(tt.wantErr) == 0 {
				g.Expect(err).ToNot(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, ErrInvalid)).To(BeTrue())
			for _, s := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}

func TestCheckBranchPrefix(t *testing.T) {
	tests := []struct {
		prefix, branch string
		wantErr        bool
	}{
		{"reflux/", "main", false},
		{"", "main", false},
		{"team/reflux/", "main", false},
		{"main/", "main", true},
		{"release/", "release/1.0", true},
		{"release/v1/", "release", true},
		{"reflux/", "", false},
		{"mainline/", "main", false},
	}
	for _, tt := range tests {
		t.Run(tt.prefix+"|"+tt.branch, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckBranchPrefix(tt.prefix, tt.branch)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ErrInvalid))
				g.Expect(err.Error()).To(ContainSubstring("spec.git.branchPrefix"))
			} else {
				g.Expect(err).ToNot(HaveOccurred())
			}
		})
	}
}
