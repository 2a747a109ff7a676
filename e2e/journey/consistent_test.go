package journey

import (
	"context"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/e2e/internal/proposals"
	"github.com/reflux-dev/reflux/reverse/record"
)

// consistent waits until each of the fixture's Kustomizations' records
// and reflux's branches agree (issue 17 §4): a record is Proposed only
// when its branch carries its edit, and a branch carries only Proposed
// records' edits.
func (f *fixture) consistent(t *testing.T, g Gomega) {
	t.Helper()
	checkout := func(b string) (string, error) {
		dir, err := os.MkdirTemp(t.TempDir(), "branch-")
		if err != nil {
			return "", err
		}
		_, err = runIn("", nil, "git", "clone", "-q", "-b", b, gitURL(f.repo), dir)
		return dir, err
	}
	for _, k := range f.ks {
		g.Eventually(func() error {
			list := &refluxv1.DriftList{}
			if err := env.Client.List(context.Background(), list, client.InNamespace(k.Namespace), client.MatchingLabels{
				record.KustomizationNameLabel: k.Name, record.KustomizationNamespaceLabel: k.Namespace}); err != nil {
				return err
			}
			var mine []string
			for _, b := range branches(t, f.repo) {
				if strings.HasPrefix(b, "reflux/"+k.Namespace+"-"+k.Name+"/") {
					mine = append(mine, b)
				}
			}
			return proposals.Check(context.Background(), proposals.Input{Kustomization: k, Records: list.Items,
				Branches: mine, Source: "main", Checkout: checkout})
		}, timeout, interval).Should(Succeed(), "records and branches of %s/%s", k.Namespace, k.Name)
	}
}
