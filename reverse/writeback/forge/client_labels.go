package forge

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// relabel adds the labels of req that res lacks, then removes the stale
// Exclusive ones. A pull request with none of them was never decorated:
// its reviewers and assignees are asked with the labels. Adding first means a pull request whose severity
// changed never shows no severity in between.
func (c *Client) relabel(ctx context.Context, res *Result, req Request) error {
	if _, ok := c.b.(unlabelled); ok {
		return nil
	}
	if missing := missingLabels(res.Labels, req.Labels); len(missing) > 0 {
		decoration := Request{Labels: missing}
		if len(missing) == len(req.Labels) {
			// None of reflux's labels: the decoration after creating the
			// pull request failed (backends label last), so its reviewers
			// and assignees were never asked either. Ask them now.
			decoration.Reviewers, decoration.Assignees = req.Reviewers, req.Assignees
		}
		if err := c.b.decorate(ctx, res.Number, decoration); err != nil {
			return writing("labelling pull request "+res.URL, err)
		}
		res.Labels, res.Updated = append(slices.Clone(res.Labels), missing...), true
	}
	if stale := staleLabels(res.Labels, req.Labels, req.Exclusive); len(stale) > 0 {
		if err := c.b.unlabel(ctx, res.Number, stale); err != nil {
			return writing(fmt.Sprintf("removing labels %v from pull request %s", stale, res.URL), err)
		}
		res.Labels = slices.DeleteFunc(slices.Clone(res.Labels), func(l string) bool { return slices.Contains(stale, l) })
		res.Updated = true
	}
	return nil
}

// unlabelled is a backend whose forge keeps no pull-request labels
// (Bitbucket Server): there is nothing to bring in step.
type unlabelled interface{ noLabels() }

// missingLabels returns the labels of want that have lacks.
func missingLabels(have, want []string) []string {
	var out []string
	for _, l := range want {
		if !slices.Contains(have, l) {
			out = append(out, l)
		}
	}
	return out
}

// staleLabels returns the labels of have that reflux owns (they match an
// exclusive entry) but no longer wants. Labels no entry matches belong to
// humans and are never stale.
func staleLabels(have, want, exclusive []string) []string {
	var out []string
	for _, l := range have {
		if owned(l, exclusive) && !slices.Contains(want, l) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// owned reports whether label matches an exclusive entry: the entry
// itself, or any label under an entry ending in "/".
func owned(label string, exclusive []string) bool {
	for _, e := range exclusive {
		if label == e || (strings.HasSuffix(e, "/") && strings.HasPrefix(label, e)) {
			return true
		}
	}
	return false
}
