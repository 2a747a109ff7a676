package install

import (
	"testing"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// reflux's CRDs come only from Flux here, and the deployment
	// controllers run so that Flux's wait sees reflux's Deployment (scaled
	// to zero: no kubelet runs) become Available.
	fixture.Main(m, &env, fixture.Suite{Env: testenv.Options{WithoutRefluxCRDs: true, Workloads: true}})
}
