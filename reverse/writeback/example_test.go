package writeback_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reflux-dev/reflux/reverse/writeback"
	"github.com/reflux-dev/reflux/reverse/writeback/git"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// This is how the reverse-sync controller drives a write-back: auth and
// signer come from the GitRepository's and the policy's Secrets, Apply
// runs the kustomize editor in the worktree.
func ExampleEngine_Run() {
	ctx := context.Background()
	repoURL := "ssh://git@github.com/acme/fleet.git"
	gitSecret := map[string][]byte{"identity": nil, "known_hosts": nil} // Secret.Data
	signingSecret := map[string][]byte{signing.KeySSH: nil}             // Secret.Data

	eng, err := writeback.New("/var/cache/reflux/git")
	if err != nil {
		panic(err)
	}
	auth, err := git.NewAuth(repoURL, gitSecret)
	if err != nil {
		fmt.Println("stall:", err)
		return
	}
	signer, err := signing.FromSecret(signingSecret)
	if err != nil {
		fmt.Println("stall:", err)
		return
	}
	res, err := eng.Run(ctx, writeback.Request{
		RepoURL:       repoURL,
		Auth:          auth,
		SourceBranch:  "main",
		Kustomization: writeback.Kustomization{Namespace: "flux-system", Name: "apps"},
		Fingerprint:   "sha256:0123456789abcdef",
		Kind:          writeback.KindMerge,
		Author:        writeback.Author{Name: "reflux", Email: "reflux@acme.example"},
		Signer:        signer,
		Fields: []message.Field{{Object: "apps/v1/Deployment apps/web", Pointer: "/spec/replicas",
			GitValue: "2", LiveValue: "5", File: "apps/web/deploy.yaml", Line: 12}},
		Apply: func(dir string) ([]string, error) {
			// The kustomize/edit editor goes here, followed by a re-render
			// that checks the overlay now produces the live value.
			path := "apps/web/deploy.yaml"
			return []string{path}, os.WriteFile(filepath.Join(dir, path), []byte("replicas: 5\n"), 0o644)
		},
	})
	switch res.Outcome {
	case writeback.BranchPushed, writeback.UpToDate:
		fmt.Println("review", res.Branch)
	case writeback.Obsolete:
		// Close the branch's pull request first, then delete the branch
		// at the commit the run saw.
		fmt.Println("close and delete", res.Branch, "at", res.Commit)
	case writeback.Superseded:
		fmt.Println("write the new drift set now")
	case writeback.Conflict, writeback.Refused:
		fmt.Println("needs a human:", res.Reason)
	case writeback.GitError:
		fmt.Println("retry later:", err)
	}
}
