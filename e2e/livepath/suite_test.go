package livepath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/refluxtest"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// shardKey is Flux's sharding label. The suite's own reflux takes what no
// shard selects, as Flux's sharding guide has the main controller do.
const shardKey = "sharding.fluxcd.io/key"

// writeBackTimeout is short so that a stalled git server turns into a
// GitError, and a retry, within the test.
const writeBackTimeout = 3 * time.Second

var (
	env     *testenv.Env
	alice   ctrlclient.Client
	logPath string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	scheme, err := manager.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Flux applies a tree of thousands of objects here: give it time.
	env, err = testenv.Start(ctx, testenv.Options{Scheme: scheme, WaitTimeout: 10 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	logPath = filepath.Join(env.Dir, "reflux.log")
	code := 1
	stop, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
	} else {
		code = m.Run()
		stop()
	}
	if code != 0 {
		_ = env.DumpLogs(os.Stdout, 256<<10)
		_ = testenv.DumpFiles(os.Stdout, 256<<10, logPath, shardLog("a"), shardLog("b"))
	}
	return code
}

func setup() (func(), error) {
	ctx := context.Background()
	user, err := env.AddBreakGlassUser(ctx, "alice@example.com")
	if err != nil {
		return nil, err
	}
	// reflux runs as config/default installs it, even in-process.
	installed, err := testenv.InstalledUser()(ctx, env)
	if err != nil {
		return nil, err
	}
	refluxConfig = installed.Config
	if alice, err = ctrlclient.New(user.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
		return nil, err
	}
	mainWrites = newWriteLog()
	r, err := startReflux(logPath, "!"+shardKey, mainWrites)
	if err != nil {
		return nil, err
	}
	return r.Stop, nil
}

// refluxConfig connects as reflux's installed ServiceAccount.
var refluxConfig *rest.Config

// mainWrites are the writes of the suite's own reflux.
var mainWrites *writeLog

func shardLog(shard string) string { return filepath.Join(env.Dir, "reflux-shard-"+shard+".log") }

// startReflux starts a reflux governing what selector selects, logging
// its writes to writes.
func startReflux(log, selector string, writes *writeLog) (*refluxtest.Reflux, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(refluxConfig)
	cfg.Wrap(writes.wrap)
	return refluxtest.Start(refluxtest.Options{Config: cfg, LogPath: log, Debug: true, Selector: sel,
		Controllers: manager.Options{
			Concurrent: 2, ArtifactRetry: 2 * time.Second, WriteBackTimeout: writeBackTimeout,
			// The test git server speaks plain HTTP on loopback.
			AllowInsecureHTTP: true, GitCacheDir: filepath.Join(env.Dir, "git-cache-"+filepath.Base(log)),
		}})
}
