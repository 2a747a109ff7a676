package writeback

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
	"github.com/reflux-dev/reflux/reverse/writeback/message"
)

// TestCommitCarriesProvenance reads a pushed commit's trailers with git's
// own parser: the records, rule, severity, field manager and audited user
// of its fields, after the trailers that identify the drift set.
func TestCommitCarriesProvenance(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	req := f.request(fp1, setReplicas(5))
	req.Fields[0].Record, req.Fields[0].Rule = "flux-system/deployment-web-5f1e", "default:replicas"
	req.Fields[0].Manager, req.Fields[0].User = "kubectl-scale", "alice@example.com"
	res := f.run(req)
	g.Expect(res.Outcome).To(Equal(BranchPushed))

	msg := f.gitOut("log", "-1", "--format=%B", res.Commit)
	cmd := exec.Command("git", "interpret-trailers", "--parse")
	cmd.Dir = filepath.Join(f.srv.Root(), repoName)
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(strings.Split(strings.TrimSpace(string(out)), "\n")).To(Equal([]string{
		message.TrailerFingerprint + ": " + fp1,
		"Reflux-Kustomization: flux-system/apps",
		"Reflux-Kind: merge",
		"Reflux-Source-Revision: main@sha1:" + res.Base,
		"Reflux-Drift: flux-system/deployment-web-5f1e",
		"Reflux-Rule: default:replicas",
		"Reflux-Severity: low",
		"Reflux-Field-Manager: kubectl-scale",
		"Reflux-Edited-By: alice@example.com",
	}))
	g.Expect(msg).ToNot(ContainSubstring("Co-authored-by"), "the person who edited the cluster did not author the commit")
}
