package branches

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/chart"
)

// chartVerifier renders reverse/chart's webapp chart with the values the
// test tree's prod overlay gives it: what helmlive.Verifier does with the
// release helm-controller made, without a cluster to read it from.
type chartVerifier struct {
	t     *testing.T
	asked []types.NamespacedName
	err   error // returned instead of rendering, when set
}

func (v *chartVerifier) VerifyValues(_ context.Context, hr types.NamespacedName, set []chart.Setting, want []chart.Wanted) error {
	v.asked = append(v.asked, hr)
	if v.err != nil {
		return v.err
	}
	ch, err := chart.Load("../../chart/testdata/charts/webapp")
	if err != nil {
		v.t.Fatal(err)
	}
	values := map[string]any{"replicaCount": 4, "image": map[string]any{"tag": "1.27.0"}}
	return chart.VerifyValues(ch, values, chart.Release{Name: "shop", Namespace: "shop", Revision: 2, IsUpgrade: true}, set, want)
}

// helmSet is a live `kubectl scale` of the chart's Deployment to live
// replicas, recorded with its values origin: replicaCount, set in the
// prod overlay's patch on the HelmRelease's spec.values.
func helmSet(url, live string) reverse.DriftSet {
	seen := metav1.NewTime(time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC))
	rec := refluxv1.Drift{}
	rec.Name, rec.Namespace = "deployment-shop-webapp-1", "flux-system"
	rec.Spec.Object = refluxv1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "shop-webapp"}
	rec.Spec.HelmRelease = &refluxv1.HelmReleaseRef{Namespace: "shop", Name: "shop", Release: "shop/shop.v1"}
	rec.Spec.FirstSeen = seen
	rec.Spec.Fields = []refluxv1.DriftField{{
		Pointer: "/spec/replicas", ChangeType: refluxv1.ChangeUpdate, GitValue: "4", LiveValue: live,
		Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, Rule: "replicas", FirstSeen: &seen,
		Origin: &refluxv1.FieldOrigin{File: "overlays/prod/values.yaml", Line: 7, Column: 19, Kind: "values",
			ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:9"},
		Modifier: &refluxv1.Modifier{Manager: "kubectl", User: "alice@example.com"},
	}}
	return setOf(url, []refluxv1.Drift{rec})
}

// helmField is helmSet with its one field made another by change, and
// the set's fingerprint made again.
func helmField(url string, change func(f *refluxv1.DriftField)) reverse.DriftSet {
	set := helmSet(url, "6")
	change(&set.Records[0].Spec.Fields[0])
	set.Fingerprint = reverse.Fingerprint(set.Records)
	return set
}

// pushedDiff writes set with h, expects its branch pushed changing file
// alone, and returns the branch's clone and its diff against main.
func pushedDiff(t *testing.T, h *Writer, srv *gittestserver.GitServer, set reverse.DriftSet, file string) (dir, diff string) {
	t.Helper()
	g := NewWithT(t)
	proposals, err := h.Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals[0].Outcome).To(Equal(refluxv1.BranchPushedReason), proposals[0].Reason)
	dir = clone(t, srv, proposals[0].Branch)
	g.Expect(strings.TrimSpace(run(t, dir, "git", "diff", "--name-only", "origin/main", "HEAD"))).To(Equal(file))
	return dir, run(t, dir, "git", "diff", "-U0", "origin/main", "HEAD")
}

// refusedIn writes set to a fresh server holding tree, and expects
// nothing pushed, for a reason that says says.
func refusedIn(t *testing.T, tree string, set reverse.DriftSet, says string) {
	t.Helper()
	g := NewWithT(t)
	_, set.Source.URL = gitServerOf(t, tree)
	proposals, err := newWriter(t).Write(context.Background(), set)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(proposals[0].Outcome).NotTo(Equal(refluxv1.BranchPushedReason))
	g.Expect(proposals[0].Reason).To(ContainSubstring(says))
}

// TestAValuesChangeIsWrittenAtTheValuesLine (issue 19 §6): a Merge field
// of a chart's Deployment becomes one changed line, the values key's in
// the overlay's patch, comments kept, verified through the chart.
func TestAValuesChangeIsWrittenAtTheValuesLine(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServerOf(t, "testdata/helm")
	h := newWriter(t)
	v := &chartVerifier{t: t}
	h.Values = v

	dir, diff := pushedDiff(t, h, srv, helmSet(url, "6"), "overlays/prod/values.yaml")
	g.Expect(v.asked).To(Equal([]types.NamespacedName{{Namespace: "shop", Name: "shop"}}))
	g.Expect(diff).To(ContainSubstring("-    replicaCount: 4 # prod's baseline\n+    replicaCount: 6 # prod's baseline\n"))
	g.Expect(strings.Count(diff, "\n+    ")).To(Equal(1), diff)
	base, err := os.ReadFile(filepath.Join(dir, "base/release.yaml"))
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(base)).To(ContainSubstring("replicaCount: 3"), "the base keeps its own value")
}

// TestAnImageRollbackIsWrittenAtTheTagsLine: the chart builds the image
// from repository and tag; alice rolled it back to another tag, so the
// tag's line changes, and the chart's render confirms the image.
func TestAnImageRollbackIsWrittenAtTheTagsLine(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServerOf(t, "testdata/helm")
	h := newWriter(t)
	h.Values = &chartVerifier{t: t}
	rollback := func(git string) func(f *refluxv1.DriftField) {
		return func(f *refluxv1.DriftField) {
			f.Pointer, f.GitValue, f.LiveValue = "/spec/template/spec/containers/0/image", git, `"nginx:1.26.3"`
			f.Origin = &refluxv1.FieldOrigin{File: "overlays/prod/values.yaml", Line: 9, Column: 12, Kind: "computed",
				ValuesKeys: []string{"image.tag"}, Why: "the chart builds the value from image.repository+image.tag; only image.tag differs live"}
		}
	}

	_, diff := pushedDiff(t, h, srv, helmField(url, rollback(`"nginx:1.27.0"`)), "overlays/prod/values.yaml")
	g.Expect(diff).To(ContainSubstring("-      tag: \"1.27.0\"\n+      tag: \"1.26.3\"\n"))
	g.Expect(strings.Count(diff, "\n+ ")).To(Equal(1), diff)

	// Git's tag changed since: the recorded image is no longer made from
	// it, and nothing is written.
	refusedIn(t, "testdata/helm", helmField(url, rollback(`"nginx:1.25.0"`)),
		"image.tag is 1.27.0 in Git, which does not make the recorded \"nginx:1.25.0\"")
}

// TestAChartDefaultIsAddedWhenThePolicySaysSo (issue 19 §6): a field
// only the chart's values.yaml sets, resources.requests.cpu, is refused
// naming the key to add; with spec.git.addChartDefaults the key is added
// under the overlay's spec.values, with the maps above it, verified
// through the chart.
func TestAChartDefaultIsAddedWhenThePolicySaysSo(t *testing.T) {
	g := NewWithT(t)
	chartDefault := func(f *refluxv1.DriftField) {
		f.Pointer, f.GitValue, f.LiveValue = "/spec/template/spec/containers/0/resources/requests/cpu", `"100m"`, `"20m"`
		f.Origin = &refluxv1.FieldOrigin{Kind: "chart-default", Refused: "chart-default", EditAt: "overlays/prod/values.yaml:6",
			Why: "the chart's values.yaml sets resources.requests.cpu; add it under spec.values", ValuesKeys: []string{"resources.requests.cpu"},
			Template: "templates/deployment.yaml:35"}
	}
	refusedIn(t, "testdata/helm", helmField("", chartDefault),
		"add it under spec.values (spec.git.addChartDefaults lets reflux add it)")

	srv, url := gitServerOf(t, "testdata/helm")
	h := newWriter(t)
	h.Values = &chartVerifier{t: t}
	set := helmField(url, chartDefault)
	set.Policy.Spec.Git.AddChartDefaults = true
	dir, diff := pushedDiff(t, h, srv, set, "overlays/prod/values.yaml")
	g.Expect(diff).To(ContainSubstring("@@ -9,0 +10,3 @@ spec:\n+    resources:\n+      requests:\n+        cpu: 20m\n"), diff)
	g.Expect(strings.Count(diff, "\n+ ")).To(Equal(3), diff)
	msg := run(t, dir, "git", "log", "-1", "--format=%B")
	g.Expect(msg).To(ContainSubstring(`requests/cpu: "100m" -> "20m" (origin overlays/prod/values.yaml:6;`), "where the key is added")
}

// TestAValuesFromFileChangesItsLine (issue 19 §6): a field whose values
// key a file spec.valuesFrom takes sets is written at that file's line,
// comment kept, the rest of the file untouched, verified through the
// chart.
func TestAValuesFromFileChangesItsLine(t *testing.T) {
	g := NewWithT(t)
	srv, url := gitServerOf(t, "testdata/helm-valuesfrom")
	h := newWriter(t)
	h.Values = &chartVerifier{t: t}
	sizing := func(git string) func(f *refluxv1.DriftField) {
		return func(f *refluxv1.DriftField) {
			f.Pointer, f.GitValue, f.LiveValue = "/spec/template/spec/containers/0/resources/requests/memory", git, `"256Mi"`
			f.Origin = &refluxv1.FieldOrigin{File: "overlays/prod/sizing.yaml", Line: 4, Column: 13, Kind: "values-from",
				ValuesKeys: []string{"resources.requests.memory"}, Template: "templates/deployment.yaml:35"}
		}
	}

	_, diff := pushedDiff(t, h, srv, helmField(url, sizing(`"128Mi"`)), "overlays/prod/sizing.yaml")
	g.Expect(diff).To(ContainSubstring("-    memory: 128Mi # p95 was 90Mi\n+    memory: 256Mi # p95 was 90Mi\n"), diff)
	g.Expect(strings.Count(diff, "\n+ ")).To(Equal(1), diff)

	// Git's line changed since: nothing is written.
	refusedIn(t, "testdata/helm-valuesfrom", helmField(url, sizing(`"96Mi"`)),
		"is 128Mi in Git now, the drift was recorded against \"96Mi\"")
	// A file the tree makes into a Secret is not written.
	refusedIn(t, "testdata/helm-valuesfrom-secret", helmField(url, sizing(`"128Mi"`)),
		"set in overlays/prod/sizing.yaml, which the tree makes into a Secret")
}

// TestAValuesChangeTheChartDoesNotRenderIsRefused: a change that would
// move more than the live edit, that the chart refuses, that no chart can
// verify, or whose release cannot be read is not written, with why, as
// any edit the write-back cannot make.
func TestAValuesChangeTheChartDoesNotRenderIsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		values ValuesVerifier
		says   string
	}{
		{name: "the release cannot be read",
			values: &chartVerifier{err: errors.New("secrets \"sh.helm.release.v1.shop.v1\" is forbidden")},
			says:   "verifying the values change of HelmRelease shop/shop: secrets"},
		{name: "unverified", values: &chartVerifier{err: chartErr(chart.ErrUnverified, "checksum/config changes too")},
			says: "checksum/config changes too"},
		{name: "the chart fails to render", values: &chartVerifier{err: chartErr(chart.ErrRender, "image.repository is required")},
			says: "image.repository is required"},
		{name: "no chart to render", says: "helm-controller's CRDs were not installed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, url := gitServerOf(t, "testdata/helm")
			h := newWriter(t)
			if c.values != nil {
				h.Values = c.values
			}
			proposals, err := h.Write(context.Background(), helmSet(url, "6"))
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(proposals[0].Outcome).To(Equal(refluxv1.ConflictReason), proposals[0].Reason)
			g.Expect(proposals[0].Reason).To(ContainSubstring(c.says))
			heads := run(t, "", "git", "ls-remote", "--heads", srv.HTTPAddressWithCredentials()+"/shop.git")
			g.Expect(strings.Count(heads, "refs/heads/")).To(Equal(1), heads)
		})
	}
}

func chartErr(kind error, text string) error {
	return errors.Join(kind, errors.New(text))
}
