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
		a := newApp(t, "full-secrets", "", func(p *refluxv1.ReverseSyncPolicy) { p.Spec.Git.ReportOnly = true })
		r := startReflux(t, name, p)
		expectAccess(g, r.User.Config, true, a.Name, "get secrets", "list secrets", "watch secrets", "patch secrets")

		db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: a.Name}}
		editHeld(g, a, db, "/data/password", func() { db.Data["password"] = []byte("rotated-by-hand") })
		g.Expect(forbidden(g, name)).To(BeEmpty(), "requests the apiserver refused reflux")
	})

	t.Run("namespaced", func(t *testing.T) {
		// The component's role aggregates into reflux-workloads, which
		// this profile binds in tenant-a only.
		g := NewWithT(t)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(context.Background(), ns))).To(Succeed())
		user := installSecretsProfile(t, profile{path: "profiles/namespaced", components: []string{"components/secrets"}})
		expectAccess(g, user.Config, true, "tenant-a", "list secrets", "watch secrets", "patch secrets")
		expectAccess(g, user.Config, false, "default", "list secrets", "get secrets")
	})

	t.Run("read-only", func(t *testing.T) {
		g := NewWithT(t)
		user := installSecretsProfile(t, profile{path: "profiles/read-only", components: []string{"components/secrets-read-only"}})
		expectAccess(g, user.Config, true, "default", "get secrets", "watch secrets")
		expectAccess(g, user.Config, true, "", "list secrets")
		expectAccess(g, user.Config, false, "default", "patch secrets", "patch configmaps")
	})
}

// installSecretsProfile installs p, which must run reflux with
// --secrets=read as the components make it, until the test ends, and
// returns its ServiceAccount.
func installSecretsProfile(t *testing.T, p profile) testenv.User {
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
	return user
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
