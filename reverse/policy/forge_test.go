package policy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
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
			f := NewForgeChecks(func() time.Time { return now })
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
	f := NewForgeChecks(func() time.Time { return now })
	f.passed(forge.Options{Provider: "github", RepoURL: "https://github.com/a/b"})
	now = now.Add(forgeCheckTTL)
	f.passed(forge.Options{Provider: "github", RepoURL: "https://github.com/a/c"})
	g.Expect(f.passes).To(HaveLen(1), "the expired pass is dropped")

	var none *ForgeChecks
	none.passed(forge.Options{})
	g.Expect(none.fresh(forge.Options{})).To(BeFalse(), "a nil cache checks every time")
}

// TestForgeCheck runs Check against a GitLab that answers per repository:
// a refusal is the user's to fix, an outage is retried, and a pass stands.
func TestForgeCheck(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := asked
		asked = nil
		return out
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.EscapedPath())
		mu.Unlock()
		switch r.URL.EscapedPath() {
		case "/api/v4/projects/acme%2Ffleet":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":5,"name":"fleet","path_with_namespace":"acme/fleet"}`))
		case "/api/v4/projects/acme%2Fhidden":
			http.Error(w, `{"message":"404 Project Not Found"}`, http.StatusNotFound)
		case "/api/v4/projects/acme%2Flocked":
			http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
		default:
			<-r.Context().Done() // a forge that never answers
		}
	}))
	defer srv.Close()
	pr := &refluxv1.PullRequestSpec{Provider: refluxv1.Provider("gitlab"), APIURL: srv.URL}
	fleet := "https://gl.example/acme/fleet.git"
	tests := []struct {
		name    string
		urls    []string
		invalid bool
		err     string
	}{
		{name: "a reachable repository, named twice", urls: []string{fleet, "", fleet}},
		{name: "a repository the token cannot see", urls: []string{fleet, "https://gl.example/acme/hidden.git"}, invalid: true,
			err: "spec.git.pullRequest: gitlab repository https://gl.example/acme/hidden.git"},
		{name: "a token the forge refuses", urls: []string{"https://gl.example/acme/locked.git"}, invalid: true},
		{name: "a forge that does not answer", urls: []string{"https://gl.example/acme/down.git"},
			err: "gitlab repository https://gl.example/acme/down.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			seen()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := NewForgeChecks(time.Now).Check(ctx, pr, "glpat", tt.urls)
			if tt.err == "" && !tt.invalid {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(seen()).To(Equal([]string{"/api/v4/projects/acme%2Ffleet"}), "each repository is asked once")
				return
			}
			g.Expect(errors.Is(err, ErrInvalid)).To(Equal(tt.invalid), "%v", err)
			g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
		})
	}

	g := NewWithT(t)
	checks := NewForgeChecks(time.Now)
	g.Expect(checks.Check(context.Background(), pr, "glpat", []string{fleet})).To(Succeed())
	seen()
	g.Expect(checks.Check(context.Background(), pr, "glpat", []string{fleet})).To(Succeed())
	g.Expect(seen()).To(BeEmpty(), "a check that passed stands for its TTL")
	var none *ForgeChecks
	g.Expect(none.Check(context.Background(), pr, "glpat", []string{fleet})).To(Succeed())
	g.Expect(seen()).To(HaveLen(1), "a nil ForgeChecks asks every time")
}
