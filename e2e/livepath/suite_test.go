package livepath

import (
	"context"
	"testing"
	"time"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 100 * time.Millisecond
	// shardKey is Flux's sharding label. The suite's own reflux takes what
	// no shard selects, as Flux's sharding guide has the main controller do.
	shardKey = "sharding.fluxcd.io/key"
)

var (
	env   *testenv.Env
	alice fixture.Person
	// mainWrites are the writes of the suite's own reflux.
	mainWrites = &writeLog{}
)

func TestMain(m *testing.M) {
	// Flux applies a tree of thousands of objects here: give it time.
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{WaitTimeout: 10 * time.Minute}})
}

func setup(ctx context.Context, env *testenv.Env) error {
	var err error
	if alice, err = fixture.OnCall(ctx, env, "alice@example.com"); err != nil {
		return err
	}
	_, err = fixture.StartSuiteReflux(ctx, env, refluxOptions("reflux", "!"+shardKey, mainWrites))
	return err
}

// refluxOptions are those of a reflux governing what selector selects,
// its writes logged to writes. Its write-back timeout is short, so that
// a stalled git server turns into a GitError, and a retry, within a test.
func refluxOptions(name, selector string, writes *writeLog) fixture.Options {
	return fixture.Options{Name: name, Selector: selector, Requests: writes.wrap, Args: []string{"--write-back-timeout=3s"}}
}
