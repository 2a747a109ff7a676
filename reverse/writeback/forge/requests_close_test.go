package forge

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

const (
	ghPulls   = "GET /api/v3/repos/acme/fleet/pulls"
	glMRs     = "GET /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests"
	closeNote = "The drift this pull request carried is gone from the cluster."
)

func TestGitHubCloseRequests(t *testing.T) {
	const (
		comment = "POST /api/v3/repos/acme/fleet/issues/3/comments"
		edit    = "PATCH /api/v3/repos/acme/fleet/pulls/3"
	)
	tests := []struct {
		name    string
		list    string
		comment string
		want    State
		calls   []string
	}{
		{"open: commented on, then closed", `[{"number":3,"state":"open","head":{"ref":"reflux/a/b"}}]`,
			closeNote, Closed, []string{ghPulls, comment, edit}},
		{"open, no comment: closed only", `[{"number":3,"state":"open","head":{"ref":"reflux/a/b"}}]`,
			"", Closed, []string{ghPulls, edit}},
		{"closed already: left alone", `[{"number":3,"state":"closed","head":{"ref":"reflux/a/b"}}]`,
			closeNote, Closed, []string{ghPulls}},
		{"merged: left alone", `[{"number":3,"state":"closed","merged_at":"2026-01-02T03:04:05Z","head":{"ref":"reflux/a/b"}}]`,
			closeNote, Merged, []string{ghPulls}},
		{"no pull request: nothing to do", `[]`, closeNote, "", []string{ghPulls}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{ghPulls: tt.list,
				comment: `{"id":1}`, edit: `{"number":3,"state":"closed"}`}}
			pr, err := recordingClient(t, "github", rec).Close(context.Background(), "reflux/a/b", tt.comment)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(pr.State).To(Equal(tt.want))
			g.Expect(rec.keys()).To(Equal(tt.calls), "the comment goes first, so it is on the pull request when it closes")
			if c, ok := rec.find(comment); ok {
				g.Expect(c.Body).To(Equal(map[string]any{"body": closeNote}))
			}
			if c, ok := rec.find(edit); ok {
				g.Expect(c.Body).To(Equal(map[string]any{"state": "closed"}), "closed unmerged, nothing else edited")
			}
		})
	}
}

func TestGitLabCloseRequests(t *testing.T) {
	const (
		note = "POST /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/4/notes"
		put  = "PUT /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/4"
	)
	tests := []struct {
		name  string
		list  string
		want  State
		calls []string
	}{
		{"opened: commented on, then closed", `[{"iid":4,"state":"opened","source_branch":"reflux/a/b"}]`,
			Closed, []string{glMRs, note, put}},
		{"closed already: left alone", `[{"iid":4,"state":"closed","source_branch":"reflux/a/b"}]`,
			Closed, []string{glMRs}},
		{"merged: left alone", `[{"iid":4,"state":"merged","source_branch":"reflux/a/b"}]`,
			Merged, []string{glMRs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{glMRs: tt.list,
				note: `{"id":1}`, put: `{"iid":4,"state":"closed"}`}}
			pr, err := recordingClient(t, "gitlab", rec).Close(context.Background(), "reflux/a/b", closeNote)
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(pr.State).To(Equal(tt.want))
			g.Expect(pr.Number).To(Equal(4))
			g.Expect(rec.keys()).To(Equal(tt.calls))
			if c, ok := rec.find(note); ok {
				g.Expect(c.Body).To(Equal(map[string]any{"body": closeNote}))
			}
			if c, ok := rec.find(put); ok {
				g.Expect(c.Body).To(Equal(map[string]any{"state_event": "close"}))
			}
		})
	}
}

func TestCloseRefused(t *testing.T) {
	g := NewWithT(t)
	// No answer for the comment: the recorder says 404, and the pull
	// request is not closed without the comment that says why.
	rec := &recorder{answers: map[string]string{
		ghPulls: `[{"number":3,"state":"open","html_url":"https://gh.example/acme/fleet/pull/3","head":{"ref":"reflux/a/b"}}]`,
	}}
	pr, err := recordingClient(t, "github", rec).Close(context.Background(), "reflux/a/b", closeNote)
	var ferr *Error
	g.Expect(errors.As(err, &ferr)).To(BeTrue(), "err: %v", err)
	g.Expect(ferr.Op).To(Equal("commenting on pull request https://gh.example/acme/fleet/pull/3"))
	g.Expect(StatusCode(err)).To(Equal(404))
	g.Expect(pr.State).To(Equal(Open))
	g.Expect(rec.keys()).To(Equal([]string{ghPulls, "POST /api/v3/repos/acme/fleet/issues/3/comments"}))
}

func TestCommentRequests(t *testing.T) {
	tests := []struct{ provider, key string }{
		{"github", "POST /api/v3/repos/acme/fleet/issues/5/comments"},
		{"gitlab", "POST /api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests/5/notes"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			g := NewWithT(t)
			rec := &recorder{answers: map[string]string{tt.key: `{"id":1}`}}
			c := recordingClient(t, tt.provider, rec)
			g.Expect(c.Comment(context.Background(), 5, "severity rose to critical")).To(Succeed())
			g.Expect(c.Comment(context.Background(), 5, "")).To(Succeed(), "an empty comment is not sent")
			g.Expect(rec.keys()).To(Equal([]string{tt.key}))
			sent, _ := rec.find(tt.key)
			g.Expect(sent.Body).To(Equal(map[string]any{"body": "severity rose to critical"}))

			err := c.Comment(context.Background(), 6, "to a pull request the forge does not know")
			g.Expect(err).To(MatchError(ContainSubstring("commenting on pull request #6")))
			g.Expect(StatusCode(err)).To(Equal(404), "the forge's status survives the wrapping")
		})
	}
}
