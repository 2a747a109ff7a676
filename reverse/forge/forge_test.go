package forge

import "testing"

func TestStale(t *testing.T) {
	tests := []struct {
		name   string
		pr     PullRequest
		commit string
		want   bool
	}{
		{"closed, the branch's commit", PullRequest{State: Closed, HeadCommit: "a1"}, "a1", false},
		{"closed, another commit: an earlier branch of this name", PullRequest{State: Closed, HeadCommit: "a1"}, "b2", true},
		{"merged, another commit", PullRequest{State: Merged, HeadCommit: "a1"}, "b2", true},
		{"open follows its branch", PullRequest{State: Open, HeadCommit: "a1"}, "b2", false},
		{"the forge named no head commit", PullRequest{State: Closed}, "b2", false},
		{"the branch's commit is unknown", PullRequest{State: Closed, HeadCommit: "a1"}, "", false},
		{"no pull request", PullRequest{}, "b2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pr.Stale(tt.commit); got != tt.want {
				t.Errorf("Stale(%q) of %+v = %v, want %v", tt.commit, tt.pr, got, tt.want)
			}
		})
	}
}
