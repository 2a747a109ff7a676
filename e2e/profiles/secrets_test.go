package profiles

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestSecretsComponent includes config/components/secrets, the opt-in to
// reading Secrets, in a profile the way a Flux Kustomization's
// spec.components would: under the full profile the ServiceAccount may
// list, watch and patch Secrets, reflux runs --secrets=read, and a kubectl
// edit of the Secret Flux applies is recorded and held. Under the
// namespaced profile the grant holds in its namespaces only; the read-only
// profile's variant, config/components/secrets-read-only, reads them and
// patches nothing.
func TestSecretsComponent(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		g := NewWithT(t)
		const name = "reflux-full-secrets"
		p := profile{path: "profiles/full", components: []string{"components/secrets"}}
		g.Expect(lastSecretsFlag(profileFlags(t, p))).To(Equal("--secrets=read"))
		a := newApp(t, "full-secrets", func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })
		r := startReflux(t, name, p)
		for _, verb := range []string{"get", "list", "watch", "patch"} {
			g.Expect(allowed(g, r.User.Config, access{verb, "", "secrets", a.ns})).To(BeTrue(), "%s secrets", verb)
		}

		db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: a.ns}}
		kubectlEdit(g, db, func() { db.Data["password"] = []byte("rotated-by-hand") })
		waitRecord(g, a.ns, "Secret", "db", "/data/password")
		g.Eventually(func() bool {
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
			return isHeld(db)
		}, timeout, interval).Should(BeTrue(), "Secret drift is held")
		g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
	})

	t.Run("namespaced", func(t *testing.T) {
		// The component's role aggregates into reflux-workloads, which
		// this profile binds in tenant-a only.
		g := NewWithT(t)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(context.Background(), ns))).To(Succeed())
		expectGrants(t, profile{path: "profiles/namespaced", components: []string{"components/secrets"}}, []grant{
			{access{"list", "", "secrets", "tenant-a"}, true},
			{access{"watch", "", "secrets", "tenant-a"}, true},
			{access{"patch", "", "secrets", "tenant-a"}, true},
			{access{"list", "", "secrets", "default"}, false},
			{access{"get", "", "secrets", "default"}, false},
		})
	})

	t.Run("read-only", func(t *testing.T) {
		expectGrants(t, profile{path: "profiles/read-only", components: []string{"components/secrets-read-only"}}, []grant{
			{access{"get", "", "secrets", "default"}, true},
			{access{"list", "", "secrets", ""}, true},
			{access{"watch", "", "secrets", "default"}, true},
			{access{"patch", "", "secrets", "default"}, false},
			{access{"patch", "", "configmaps", "default"}, false},
		})
	})
}

// grant is an access and whether the profile allows it.
type grant struct {
	access
	want bool
}

// expectGrants installs p, asks the apiserver each question as its
// ServiceAccount, and uninstalls it again. p must run reflux with
// --secrets=read, as the components make it.
func expectGrants(t *testing.T, p profile, grants []grant) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(lastSecretsFlag(profileFlags(t, p))).To(Equal("--secrets=read"))
	user, err := testenv.ProfileUser(p.path, p.components...)(context.Background(), env)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := env.UninstallProfile(context.Background(), p.path, p.components...); err != nil {
			t.Errorf("uninstalling %s: %v", p, err)
		}
	})
	for _, tt := range grants {
		g.Expect(allowed(g, user.Config, tt.access)).To(Equal(tt.want), "%s under %s", tt.access, p)
	}
}

// lastSecretsFlag returns the --secrets flag that wins: the last one.
func lastSecretsFlag(flags []string) string {
	last := ""
	for _, f := range flags {
		if strings.HasPrefix(f, "--secrets=") {
			last = f
		}
	}
	return last
}
