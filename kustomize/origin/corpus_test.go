package origin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusTally counts the leaves of one case by outcome.
type corpusTally struct {
	leaves, mapped int
	refused        map[Reason]int
}

func (t corpusTally) share() float64 {
	if t.leaves == 0 {
		return 0
	}
	return float64(t.mapped) / float64(t.leaves)
}

// modelFaults are the refusals that admit the model is wrong rather than
// name a construct reflux does not reproduce: none may remain.
var modelFaults = map[Reason]bool{ReasonModelFailed: true, ReasonModelDisagrees: true}

// TestCorpus (issue 21) asks for the origin of every leaf of every case of
// every tree in kustomize/testdata, through Lookup as trace does. No leaf
// may be refused as model-failed or model-disagrees, and the share of
// leaves mapped is logged per case and in all (bench/results.md has it).
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus run builds every tree; -short skips it")
	}
	var total corpusTally
	total.refused = map[Reason]int{}
	var lines []string
	for _, tc := range append(corpus(t), editCorpus(t)...) {
		idx, _, err := Build(context.Background(), tc.opts)
		if err != nil && tc.golden == "" {
			lines = append(lines, fmt.Sprintf("%-40s not buildable: %v", tc.name, err))
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		c := corpusTally{refused: map[Reason]int{}}
		for _, ref := range idx.Objects() {
			fields, err := idx.Fields(ref)
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, ref, err)
			}
			for _, f := range fields {
				c.leaves++
				_, err := idx.Lookup(ref, f.Pointer)
				var re *RefusedError
				switch {
				case err == nil:
					c.mapped++
				case errors.As(err, &re):
					c.refused[re.Reason]++
					if modelFaults[re.Reason] {
						t.Errorf("%s: %s %s refused as %s", tc.name, ref, f.Pointer, re.Reason)
					}
				default:
					t.Errorf("%s: %s %s: %v", tc.name, ref, f.Pointer, err)
				}
			}
		}
		total.leaves += c.leaves
		total.mapped += c.mapped
		for r, n := range c.refused {
			total.refused[r] += n
		}
		lines = append(lines, fmt.Sprintf("%-40s %5d leaves %5.1f%% mapped %s", tc.name, c.leaves, 100*c.share(), reasons(c.refused)))
	}
	t.Logf("corpus:\n%s\n%-40s %5d leaves %5.1f%% mapped %s", strings.Join(lines, "\n"), "all", total.leaves, 100*total.share(), reasons(total.refused))
	if total.leaves == 0 {
		t.Fatal("the corpus has no leaves")
	}
}

// editCorpus is the original tree of every kustomize/edit case, each
// built bare or with its flux-kustomization files like the golden trees.
// They have no golden file; one that does not build (a case of a refused
// edit, say) is listed and left out.
func editCorpus(t *testing.T) []testCase {
	t.Helper()
	trees, err := filepath.Glob("../edit/testdata/*/original")
	if err != nil {
		t.Fatal(err)
	}
	var out []testCase
	for _, tree := range trees {
		fluxFiles, _ := filepath.Glob(filepath.Join(tree, "flux-kustomization*.yaml"))
		if len(fluxFiles) == 0 {
			fluxFiles = []string{""}
		}
		for _, ff := range fluxFiles {
			for _, c := range loadCases(t, tree, ff) {
				c.name, c.golden = "edit/"+filepath.Base(filepath.Dir(tree))+strings.TrimPrefix(c.name, "original"), ""
				out = append(out, c)
			}
		}
	}
	return out
}

// reasons lists refusal counts, most first.
func reasons(m map[Reason]int) string {
	var rs []Reason
	for r := range m {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return m[rs[i]] > m[rs[j]] || m[rs[i]] == m[rs[j]] && rs[i] < rs[j] })
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s=%d", r, m[r])
	}
	return strings.Join(parts, " ")
}
