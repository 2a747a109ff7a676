package forge

import (
	"slices"
	"testing"
)

func TestStale(t *testing.T) {
	tests := []struct {
		name     string
		pr       PullRequest
		commit   string
		proposed []Proposal
		want     bool
	}{
		{"closed, the branch's commit", PullRequest{State: Closed, HeadCommit: "a1"}, "a1", nil, false},
		{"closed, another commit: an earlier branch of this name", PullRequest{State: Closed, HeadCommit: "a1"}, "b2", nil, true},
		{"merged, another commit", PullRequest{State: Merged, HeadCommit: "a1"}, "b2", nil, true},
		{"open follows its branch", PullRequest{State: Open, HeadCommit: "a1"}, "b2", nil, false},
		{"the forge named no head commit", PullRequest{State: Closed}, "b2", nil, false},
		{"the branch's commit is unknown", PullRequest{State: Closed, HeadCommit: "a1"}, "", nil, false},
		{"no pull request", PullRequest{}, "b2", nil, false},
		// Bitbucket Cloud shortens the head's hash to 12 digits.
		{"closed, its short hash is the branch's commit", PullRequest{State: Closed, HeadCommit: "0123456789ab"},
			"0123456789abcdef0123456789abcdef01234567", nil, false},
		{"closed, a short hash of another commit", PullRequest{State: Closed, HeadCommit: "0123456789ab"},
			"fedcba9876543210fedcba9876543210fedcba98", nil, true},
		{"a prefix too short to name a commit", PullRequest{State: Closed, HeadCommit: "012"}, "0123456789ab", nil, true},
		// A push after the reviewer's close: an open record was proposed
		// in the closed pull request, so it decided them (issue 22 §3).
		{"closed, pushed to since, an open record names it", PullRequest{State: Closed, HeadCommit: "a1", URL: "u/1"}, "b2",
			[]Proposal{{PullRequest: "u/1", Commit: "b2"}}, false},
		{"closed, pushed to since, an open record was pushed at its head", PullRequest{State: Closed, HeadCommit: "a1", URL: "u/1"},
			"b2", []Proposal{{Commit: "a1"}}, false},
		{"closed, the open records were proposed elsewhere", PullRequest{State: Closed, HeadCommit: "a1", URL: "u/1"}, "b2",
			[]Proposal{{PullRequest: "u/2", Commit: "b2"}, {}}, true},
		// What it merged is in the source; the rebuilt branch carries the rest.
		{"merged, pushed to since, an open record names it", PullRequest{State: Merged, HeadCommit: "a1", URL: "u/1"}, "b2",
			[]Proposal{{PullRequest: "u/1"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pr.Stale(tt.commit, tt.proposed...); got != tt.want {
				t.Errorf("Stale(%q, %v) of %+v = %v, want %v", tt.commit, tt.proposed, tt.pr, got, tt.want)
			}
		})
	}
}

func TestHeadIs(t *testing.T) {
	tests := []struct {
		head, commit string
		want         bool
	}{
		{"a1b2c3d4e5f6", "a1b2c3d4e5f6", true},
		{"a1b2c3d4e5f6", "ffffffffffff", false},
		{"0123456789ab", "0123456789abcdef0123456789abcdef01234567", true},
		{"", "a1b2c3d4e5f6", true},
	}
	for _, tt := range tests {
		if got := (PullRequest{HeadCommit: tt.head}).HeadIs(tt.commit); got != tt.want {
			t.Errorf("HeadIs(%q) of head %q = %v, want %v", tt.commit, tt.head, got, tt.want)
		}
	}
}

func TestStaleLabels(t *testing.T) {
	exclusive := []string{"needs-decision", "severity/"}
	tests := []struct {
		name       string
		have, want []string
		stale      []string
	}{
		{"severity dropped", []string{"reflux", "severity/critical"}, []string{"reflux", "severity/low"}, []string{"severity/critical"}},
		{"decided", []string{"needs-decision", "severity/low"}, []string{"severity/low"}, []string{"needs-decision"}},
		{"a human's label stays", []string{"team/web", "needs-decision-later"}, nil, nil},
		{"an entry without / is a name, not a prefix", []string{"needs-decisions"}, nil, nil},
		{"a prefix alone is no label of its own", []string{"severity"}, nil, nil},
		{"wanted labels stay", []string{"severity/high", "needs-decision"}, []string{"needs-decision", "severity/high"}, nil},
		{"a label listed twice is removed once", []string{"severity/high", "severity/high"}, nil, []string{"severity/high"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := staleLabels(tt.have, tt.want, exclusive); !slices.Equal(got, tt.stale) {
				t.Errorf("staleLabels(%v, %v) = %v, want %v", tt.have, tt.want, got, tt.stale)
			}
		})
	}
	if got := staleLabels([]string{"severity/high"}, nil, nil); got != nil {
		t.Errorf("with no Exclusive nothing is stale, got %v", got)
	}
}
