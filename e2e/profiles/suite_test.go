package profiles

import (
	"testing"
	"time"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// testdata/crds: a kind reflux is granted nothing on (TestWatchForbidden).
	fixture.Main(m, &env, fixture.Suite{Env: testenv.Options{CRDDirectories: []string{"testdata/crds"}}})
}
