package forge

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// exclusive is what reflux owns of the labels in these tests.
var exclusive = []string{"needs-decision", "severity/"}

func TestGitHubExclusiveLabelRequests(t *testing.T) {
	const (
		add        = "POST /api/v3/repos/acme/fleet/issues/3/labels"
		delCrit    = "DELETE /api/v3/repos/acme/fleet/issues/3/labels/severity%2Fcritical"
		delDecided = "DELETE /api/v3/repos/acme/fleet/issues/3/labels/needs-decision"
	)
	tests := []struct {
		name   string
		labels []string
		calls  []string
		want   []string
	}{
		{"severity dropped and decided: the new severity is added before the old ones go",
			[]string{"reflux", "severity/low"}, []string{ghPulls, add, delDecided, delCrit},
			[]string{"reflux", "team/web", "severity/low"}},
		{"only decided: a removal alone updates",
			[]string{"reflux", "severity/critical"}, []string{ghPulls, delDecided},
			[]string{"reflux", "severity/critical", "team/web"}},
		{"nothing stale: nothing sent",
			[]string{"reflux", "needs-decision", "severity/critical"}, []string{ghPulls},
			[]string{"reflux", "needs-decision", "severity/critical", "team/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// No answer for needs-decision: the recorder says 404, as
			// GitHub does for a label someone removed since the lookup.
			rec := &recorder{answers: map[string]string{
				ghPulls: `[{"number":3,"state":"open","title":"t","body":"b","head":{"ref":"reflux/a/b"},
					"labels":[{"name":"reflux"},{"name":"needs-decision"},{"name":"severity/critical"},{"name":"team/web"}]}]`,
				add:     `[]`,
				delCrit: `[]`,
			}}
			res, err := recordingClient(t, "github", rec).Ensure(context.Background(), Request{Head: "reflux/a/b",
				Base: "main", Title: "t", Body: "b", Labels: tt.labels, Exclusive: exclusive})
			g.Expect(err).ToNot(HaveOccurred(), "a label already gone is not an error")
			g.Expect(rec.keys()).To(Equal(tt.calls), "team/web is a human's: never removed")
			g.Expect(res.Labels).To(ConsistOf(tt.want))
			g.Expect(res.Updated).To(Equal(len(tt.calls) > 1))
			if c, ok := rec.find(add); ok {
				g.Expect(c.List).To(ConsistOf("severity/low"))
			}
		})
	}
}

func TestGitLabExclusiveLabelRequests(t *testing.T) {
	g := NewWithT(t)
	const put = "PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/4"
	rec := &recorder{answers: map[string]string{
		glMRs: `[{"iid":4,"state":"opened","title":"t","description":"b","source_branch":"reflux/a/b",
			"labels":["reflux","needs-decision","severity/critical","team/web"]}]`,
		put: `{"iid":4}`,
	}}
	res, err := recordingClient(t, "gitlab", rec).Ensure(context.Background(), Request{Head: "reflux/a/b",
		Base: "main", Title: "t", Body: "b", Labels: []string{"reflux", "severity/low"}, Exclusive: exclusive})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(res.Updated).To(BeTrue())
	g.Expect(res.Labels).To(ConsistOf("reflux", "team/web", "severity/low"))
	puts := rec.all(put)
	g.Expect(rec.keys()).To(Equal([]string{glMRs, put, put}))
	g.Expect(puts[0].Body).To(Equal(map[string]any{"add_labels": "severity/low"}))
	g.Expect(puts[1].Body).To(Equal(map[string]any{"remove_labels": "needs-decision,severity/critical"}),
		"team/web is a human's: never removed")
}

// TestReviewersAskedAgainWhenDecorationFailed: creating the pull request
// worked, and asking for its reviewers did not (a 404 here). The next
// Ensure finds it open and without reflux's labels, which backends add
// last: the decoration never finished, so reviewers and assignees are
// asked again with the labels. A pull request with some of the labels
// was decorated; only the missing labels are added then.
func TestReviewersAskedAgainWhenDecorationFailed(t *testing.T) {
	const (
		create    = "POST /api/v3/repos/acme/fleet/pulls"
		assignees = "POST /api/v3/repos/acme/fleet/issues/3/assignees"
		reviewers = "POST /api/v3/repos/acme/fleet/pulls/3/requested_reviewers"
		labels    = "POST /api/v3/repos/acme/fleet/issues/3/labels"
	)
	req := Request{Head: "reflux/a/b", Base: "main", Title: "t", Body: "b", Labels: []string{"reflux", "severity/low"}, Draft: true,
		Exclusive: exclusive, Reviewers: []string{"alice"}, Assignees: []string{"bob"}}
	g := NewWithT(t)

	rec := &recorder{answers: map[string]string{ghPulls: `[]`, create: `{"number":3,"html_url":"https://gh.example/acme/fleet/pull/3","state":"open"}`, assignees: `{"number":3}`}}
	_, err := recordingClient(t, "github", rec).Ensure(context.Background(), req)
	g.Expect(err).To(MatchError(ContainSubstring("requesting reviews of [alice]")), "%v", rec.keys())
	g.Expect(rec.keys()).To(Equal([]string{ghPulls, create, assignees, reviewers}), "no labels after the failure")

	open := func(labels string) string {
		return `[{"number":3,"state":"open","title":"t","body":"b","head":{"ref":"reflux/a/b"},"labels":[` + labels + `]}]`
	}
	rec = &recorder{answers: map[string]string{ghPulls: open(""), assignees: `{"number":3}`, reviewers: `{"number":3}`, labels: `[]`}}
	res, err := recordingClient(t, "github", rec).Ensure(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.keys()).To(Equal([]string{ghPulls, assignees, reviewers, labels}))
	asked, _ := rec.find(reviewers)
	g.Expect(asked.Body).To(HaveKeyWithValue("reviewers", ConsistOf("alice")))
	g.Expect(res.Labels).To(ConsistOf("reflux", "severity/low"))

	rec = &recorder{answers: map[string]string{ghPulls: open(`{"name":"reflux"}`), labels: `[]`}}
	_, err = recordingClient(t, "github", rec).Ensure(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.keys()).To(Equal([]string{ghPulls, labels}), "decorated before: only the missing label")
}
