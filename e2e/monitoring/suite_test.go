package monitoring

import (
	"testing"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// The environment starts only for the test that scrapes reflux
// (fixture.Shared), so the promtool checks run in a second on their own.
func TestMain(m *testing.M) {
	fixture.Main(m, nil, fixture.Suite{Lazy: true})
}
