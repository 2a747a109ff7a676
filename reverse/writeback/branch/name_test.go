package branch

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestName(t *testing.T) {
	fp := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	long := strings.Repeat("a", 200)
	tests := []struct {
		name    string
		spec    Spec
		want    string
		wantErr error
	}{
		{name: "merge", spec: Spec{Prefix: "reflux/", Namespace: "apps", Name: "web", Fingerprint: fp},
			want: "reflux/apps-web/0123456789ab"},
		{name: "alert", spec: Spec{Prefix: "reflux/", Namespace: "apps", Name: "web", Fingerprint: fp, NeedsDecision: true},
			want: "reflux/apps-web/needs-decision-0123456789ab"},
		{name: "non-hex fingerprint is hashed", spec: Spec{Prefix: "r/", Namespace: "a", Name: "b", Fingerprint: "not hex at all"},
			want: "r/a-b/" + Short("not hex at all")},
		{name: "hostile names are sanitised", spec: Spec{Prefix: "r/", Namespace: "..x", Name: "a b~^:?*[\\@{.lock", Fingerprint: fp},
			want: "r/x-a-b/0123456789ab"},
		{name: "no fingerprint", spec: Spec{Prefix: "r/", Namespace: "a", Name: "b"}, wantErr: ErrInvalidName},
		{name: "no namespace", spec: Spec{Prefix: "r/", Name: "b", Fingerprint: fp}, wantErr: ErrInvalidName},
		{name: "bad prefix", spec: Spec{Prefix: "reflux", Namespace: "a", Name: "b", Fingerprint: fp}, wantErr: ErrInvalidPrefix},
		{name: "prefix with dotdot", spec: Spec{Prefix: "a..b/", Namespace: "a", Name: "b", Fingerprint: fp}, wantErr: ErrInvalidPrefix},
		{name: "long names are cut", spec: Spec{Prefix: "reflux/", Namespace: long, Name: long, Fingerprint: fp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Name(tt.spec)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(Validate(got)).To(Succeed())
			g.Expect(Check(tt.spec.Prefix, "main", got)).To(Succeed())
			if tt.want != "" {
				g.Expect(got).To(Equal(tt.want))
			}
			g.Expect(len(got)).To(BeNumerically("<=", MaxLength))
			info, err := Parse(tt.spec.Prefix, got)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(info.NeedsDecision).To(Equal(tt.spec.NeedsDecision))
			g.Expect(info.Short).To(Equal(Short(tt.spec.Fingerprint)))
		})
	}
}

func TestSlugKeepsLongNamesApart(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("n", 100)
	g.Expect(Slug("ns", long+"a")).ToNot(Equal(Slug("ns", long+"b")))
	g.Expect(len(Slug("ns", long))).To(BeNumerically("<=", maxSlug))
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, prefix, source, branch string
		wantErr                      error
	}{
		{name: "ok", prefix: "reflux/", source: "main", branch: "reflux/a-b/0123"},
		{name: "source branch", prefix: "reflux/", source: "reflux/a-b/0123", branch: "reflux/a-b/0123", wantErr: ErrSourceBranch},
		{name: "source as ref", prefix: "reflux/", source: "refs/heads/reflux/x", branch: "reflux/x", wantErr: ErrSourceBranch},
		{name: "outside", prefix: "reflux/", source: "master", branch: "main", wantErr: ErrOutsidePrefix},
		{name: "lookalike", prefix: "reflux/", source: "main", branch: "refluxx/a", wantErr: ErrOutsidePrefix},
		{name: "prefix only", prefix: "reflux/", source: "main", branch: "reflux", wantErr: ErrOutsidePrefix},
		{name: "invalid", prefix: "reflux/", source: "main", branch: "reflux/a..b", wantErr: ErrInvalidName},
		{name: "empty prefix", prefix: "", source: "main", branch: "main", wantErr: ErrInvalidPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Check(tt.prefix, tt.source, tt.branch)
			if tt.wantErr == nil {
				g.Expect(err).ToNot(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
		})
	}
}

func TestValidate(t *testing.T) {
	bad := []string{"", "@", "-x", "a..b", "a@{b", "a//b", "a/", "a.", "a b", "a~b", "a^b", "a:b",
		"a?b", "a*b", "a[b", "a\\b", "a\x01b", "a\x7fb", ".a", "a/.b", "a.lock", "a/b.lock/c", strings.Repeat("a", MaxLength+1)}
	for _, name := range bad {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Validate(name)).To(MatchError(ErrInvalidName))
		})
	}
	NewWithT(t).Expect(Validate("reflux/apps-web/needs-decision-0123")).To(Succeed())
}

func FuzzName(f *testing.F) {
	f.Add("apps", "web", "sha256:abc")
	f.Add("..", "a b", "x/y")
	f.Fuzz(func(t *testing.T, ns, name, fp string) {
		if ns == "" || name == "" || fp == "" {
			return
		}
		got, err := Name(Spec{Prefix: "reflux/", Namespace: ns, Name: name, Fingerprint: fp})
		if err != nil {
			t.Fatalf("Name(%q, %q, %q): %v", ns, name, fp, err)
		}
		if err := Check("reflux/", "main", got); err != nil {
			t.Fatalf("Check(%q): %v", got, err)
		}
	})
}
