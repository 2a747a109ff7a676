package testenv_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/ssh/knownhosts"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
)

// The go-git calls below are the ones Flux's source-controller and
// reflux's write-back make, so the tests see the server as they do.

func httpAuth() transport.AuthMethod {
	return &githttp.BasicAuth{Username: env.Git.Username, Password: env.Git.Password}
}

// sshAuth trusts knownHosts only, as Flux does with a GitRepository's
// known_hosts.
func sshAuth(t *testing.T, knownHosts []byte) transport.AuthMethod {
	t.Helper()
	pk, err := gitssh.NewPublicKeys("git", env.Git.Identity, "")
	if err != nil {
		t.Fatal(err)
	}
	callback, _, err := knownhosts.New(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	pk.HostKeyCallback = callback
	return pk
}

// lsRemote lists url's references.
func lsRemote(ctx context.Context, url string, auth transport.AuthMethod) ([]*plumbing.Reference, error) {
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	return remote.ListContext(ctx, &gogit.ListOptions{Auth: auth})
}

// cloneInto clones url's DefaultBranch into dir.
func cloneInto(ctx context.Context, dir, url string, auth transport.AuthMethod) (*gogit.Repository, error) {
	return gogit.PlainCloneContext(ctx, dir, false, &gogit.CloneOptions{URL: url, Auth: auth})
}

var nameSeq atomic.Int64

// freshName returns base with a number unique in the test process: the
// environment is shared, and a -count=N rerun must start from repositories
// nothing has counted yet.
func freshName(base string) string {
	return fmt.Sprintf("%s-%d", base, nameSeq.Add(1))
}
