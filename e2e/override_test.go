package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// TestOverrideManagerRevertsAddedFields runs its own environment whose
// kustomize-controller has --override-manager=legacy-app: that manager's
// added key, which survives by default (TestFieldManagersAfterForcedReconcile),
// is then removed too.
func TestOverrideManagerRevertsAddedFields(t *testing.T) {
	g := NewWithT(t)
	e := fixture.NewEnv(t, testenv.Options{KustomizeControllerArgs: []string{"--override-manager=legacy-app"}})
	app := fixture.NewApp(t, e, "override", fixture.AppOptions{Dir: "testdata/override", FluxOnly: true})

	cm := app.ConfigMap(g, "overridden")
	cm.Data["LOG_LEVEL"], cm.Data["ADDED"] = "debug", "by-legacy-app"
	g.Expect(e.Client.Update(context.Background(), cm, client.FieldOwner("legacy-app"))).To(Succeed())
	g.Expect(app.ConfigMap(g, "overridden").Data).To(HaveKey("ADDED"))

	app.Reconcile(g, "override")
	cm = app.ConfigMap(g, "overridden")
	g.Expect(cm.Data).To(Equal(map[string]string{"LOG_LEVEL": "info"}))
	g.Expect(managers(cm)).To(Equal([]string{"kustomize-controller/Apply"}))
}
