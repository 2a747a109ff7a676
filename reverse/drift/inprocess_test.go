package drift

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestInProcessComparisonReadOnly runs both comparisons as a user granted
// only get, list and watch: the dry run is forbidden (it needs patch), the
// in-process comparison gives the answer the dry run gives an admin.
func TestInProcessComparisonReadOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	git := object(t, ns, deploymentYAML)
	fluxApply(t, git)
	edit(t, git, "kubectl-edit", func(u map[string]any) {
		set(t, u, int64(5), "spec", "replicas")
		set(t, containers(u)[0].(map[string]any), "ghcr.io/example/web:9", "image")
	})
	in := Input{Desired: git, Live: get(t, git)}
	admin, err := newDetector(t).Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin.Fields).NotTo(BeEmpty())

	reader := readOnlyConfig(t, ns)
	rc, err := client.New(reader, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	dryRun, err := New(rc)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = dryRun.Detect(context.Background(), in)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "dry run as a reader: %v", err)

	dc, err := discovery.NewDiscoveryClientForConfig(reader)
	g.Expect(err).NotTo(HaveOccurred())
	inProc, err := New(rc, WithInProcessComparison(NewOpenAPITypes(dc.OpenAPIV3())))
	g.Expect(err).NotTo(HaveOccurred())
	res, err := inProc.Detect(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(admin))
}

// TestInProcessComparisonUnknownKind reports a kind the cluster does not
// serve, naming it, instead of guessing a merge.
func TestInProcessComparisonUnknownKind(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName("w")
	u.SetNamespace("default")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}})
	_, err := inProcessDetector(t).Detect(context.Background(), Input{Desired: u, Live: u.DeepCopy()})
	g.Expect(err).To(MatchError(ContainSubstring("example.com/v1")))
}

func TestParseComparison(t *testing.T) {
	tests := []struct {
		in      string
		want    Comparison
		wantErr bool
	}{
		{in: "", want: ComparisonDryRun},
		{in: "dry-run", want: ComparisonDryRun},
		{in: "in-process", want: ComparisonInProcess},
		{in: "offline", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseComparison(tt.in)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(tt.in)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// readOnlyConfig impersonates a user who may only get, list and watch
// Deployments in ns.
func readOnlyConfig(t *testing.T, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	user := "reader-" + ns
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"},
			Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return c
}
