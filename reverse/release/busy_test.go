package release

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	helmdriver "helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSettled: Helm's storage, as Helm's own driver writes it through an
// upgrade, a rollback and an uninstall, tells whether a deletion of one
// of release web v2's objects may be Helm's.
func TestSettled(t *testing.T) {
	ref := Ref{Name: "web", Namespace: "apps", Version: 2, StorageNamespace: "storage"}
	type version struct {
		n      int
		status helmcommon.Status
	}
	tests := []struct {
		name     string
		versions []version
		want     error // nil: settled
		apiErr   bool
	}{
		{name: "deployed, and nothing newer", versions: []version{{1, helmcommon.StatusSuperseded}, {2, helmcommon.StatusDeployed}}},
		{name: "an upgrade under way", versions: []version{{2, helmcommon.StatusDeployed}, {3, helmcommon.StatusPendingUpgrade}},
			want: ErrBusy},
		{name: "an upgrade done, the HelmRelease not told yet",
			versions: []version{{2, helmcommon.StatusSuperseded}, {3, helmcommon.StatusDeployed}}, want: ErrGone},
		{name: "a rollback under way", versions: []version{{2, helmcommon.StatusFailed}, {3, helmcommon.StatusPendingRollback}},
			want: ErrGone},
		{name: "a rollback of the deployed release under way",
			versions: []version{{2, helmcommon.StatusDeployed}, {3, helmcommon.StatusPendingRollback}}, want: ErrBusy},
		{name: "an upgrade that failed", versions: []version{{2, helmcommon.StatusDeployed}, {3, helmcommon.StatusFailed}},
			want: ErrBusy},
		{name: "uninstalling", versions: []version{{2, helmcommon.StatusUninstalling}}, want: ErrBusy},
		{name: "uninstalled, history kept", versions: []version{{2, helmcommon.StatusUninstalled}}, want: ErrGone},
		{name: "uninstalled", want: ErrGone},
		{name: "still installing", versions: []version{{2, helmcommon.StatusPendingInstall}}, want: ErrBusy},
		{name: "the apiserver refuses", versions: []version{{2, helmcommon.StatusDeployed}}, apiErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := fake.NewClientset()
			storage := helmdriver.NewSecrets(cs.CoreV1().Secrets("storage"))
			for _, v := range tt.versions {
				rls := &helmrelease.Release{Name: "web", Namespace: "apps", Version: v.n, Info: &helmrelease.Info{Status: v.status},
					Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"}
				g.Expect(storage.Create(fmt.Sprintf("sh.helm.release.v1.web.v%d", v.n), rls)).To(Succeed())
			}
			getter := clientsetGetter{cs: cs}
			if tt.apiErr {
				getter.err = apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "sh.helm.release.v1.web.v2", errors.New("no"))
			}
			err := Settled(context.Background(), getter, ref)
			switch {
			case tt.apiErr:
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
				g.Expect(errors.Is(err, ErrBusy) || errors.Is(err, ErrGone)).To(BeFalse(), "%v", err)
			case tt.want == nil:
				g.Expect(err).NotTo(HaveOccurred())
			default:
				g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "%v", err)
			}
		})
	}
}
