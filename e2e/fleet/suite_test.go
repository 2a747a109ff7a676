package fleet

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// hubUser is the spoke's user the hub's kubeconfig Secret connects as, as
// a fleet's hub connects to each spoke with an admin identity of its own.
const hubUser = "hub"

// The tokens the hub's and the spoke's apiservers send to reflux's one
// audit webhook, which tells their writes apart by them.
const (
	hubAuditToken   = "hub-audit-token"
	spokeAuditToken = "spoke-audit-token"
)

var (
	// env is the hub: Flux, the git server and reflux, the real binary.
	env *testenv.Env
	// spoke is the remote cluster: a kube-apiserver and etcd of its own,
	// with no Flux, and an audit log that has lists and watches too.
	spoke *testenv.Env
	// link stands between the hub and the spoke: every connection of
	// Flux's and reflux's to the spoke goes through it, so a test can
	// make the spoke stop answering the hub.
	link *testenv.StallProxy
)

func TestMain(m *testing.M) {
	fixture.Main(m, &env, fixture.Suite{Setup: setup, Env: testenv.Options{AuditWebhook: &testenv.AuditWebhook{Token: hubAuditToken}}})
}

func setup(ctx context.Context, hub *testenv.Env) error {
	var err error
	// The spoke sends its audit events to the hub's reflux, as the hub's
	// apiserver does, with a token of its own. The tests read the spoke's
	// audit log file, which has lists and watches too.
	spoke, err = testenv.Start(ctx, testenv.Options{WithoutFlux: true, WithoutRefluxCRDs: true,
		AuditWebhook: &testenv.AuditWebhook{URL: "http://" + hub.AuditWebhookAddr + "/audit", Token: spokeAuditToken, Reads: true}})
	if err != nil {
		return fmt.Errorf("starting the spoke: %w", err)
	}
	fixture.Defer(spoke.Stop)
	for _, p := range spoke.LogPaths() {
		fixture.AddLog(p)
	}
	u, err := url.Parse(spoke.Config.Host)
	if err != nil {
		return err
	}
	if link, err = testenv.NewStallProxy(u.Host); err != nil {
		return err
	}
	fixture.Defer(link.Close)
	// A short probe interval: the journeys wait seconds, not the default
	// ten, for reflux to notice the spoke going and coming back.
	tokenFile := filepath.Join(hub.Dir, "audit-token")
	if err := os.WriteFile(tokenFile, []byte(hubAuditToken), 0o600); err != nil {
		return err
	}
	_, err = fixture.StartSuiteReflux(ctx, hub, fixture.Options{Args: []string{"--cluster-probe-interval=1s",
		"--audit-addr=" + hub.AuditWebhookAddr, "--audit-token-file=" + tokenFile}})
	return err
}

// spokeKubeconfig returns a kubeconfig for the spoke's user name, in the
// system:masters group, whose server is the link to the spoke.
func spokeKubeconfig(name string) ([]byte, error) {
	u, err := spoke.AddUser(name, "system:masters")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(u.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + link.Addr()
	}
	return clientcmd.Write(*cfg)
}
