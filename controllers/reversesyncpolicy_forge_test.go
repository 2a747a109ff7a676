package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/forge"
)

func TestForgeChecksStandForTheirTTL(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	checked := forge.Options{Provider: "gitea", Token: "t0ken", APIURL: "https://gitea.example.com", RepoURL: "https://gitea.example.com/platform/apps.git"}
	tests := []struct {
		name  string
		after time.Duration
		check func(forge.Options) forge.Options
		fresh bool
	}{
		{"the same check, just after", time.Minute, func(o forge.Options) forge.Options { return o }, true},
		{"the same check, once the TTL is over", forgeCheckTTL, func(o forge.Options) forge.Options { return o }, false},
		{"a rotated token", time.Minute, func(o forge.Options) forge.Options { o.Token = "n3w"; return o }, false},
		{"another repository", time.Minute, func(o forge.Options) forge.Options { o.RepoURL += "x"; return o }, false},
		{"another forge", time.Minute, func(o forge.Options) forge.Options { o.APIURL = "https://git.example.org"; return o }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			now := t0
			f := newForgeChecks(func() time.Time { return now })
			g.Expect(f.fresh(checked)).To(BeFalse(), "nothing passed yet")
			f.passed(checked)
			now = now.Add(tt.after)
			g.Expect(f.fresh(tt.check(checked))).To(Equal(tt.fresh))
		})
	}
}

func TestForgeChecksForgetExpiredPasses(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	f := newForgeChecks(func() time.Time { return now })
	f.passed(forge.Options{Provider: "github", RepoURL: "https://github.com/a/b"})
	now = now.Add(forgeCheckTTL)
	f.passed(forge.Options{Provider: "github", RepoURL: "https://github.com/a/c"})
	g.Expect(f.passes).To(HaveLen(1), "the expired pass is dropped")

	var none *forgeChecks
	none.passed(forge.Options{})
	g.Expect(none.fresh(forge.Options{})).To(BeFalse(), "a nil cache checks every time")
}
