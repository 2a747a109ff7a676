package soak

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// git runs the real git in dir and returns its trimmed output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// repoURL is the tenant's repository on Gitea itself, with credentials:
// reviewers and the checks reach it around the proxies.
func (w *world) repoURL(name string) string {
	return strings.Replace(w.gt.URL, "://", "://"+w.gt.Username+":"+w.gt.Password+"@", 1) + "/" + w.gt.Username + "/" + name + ".git"
}

// clone is a fresh clone of every branch of a tenant's repository.
type clone struct {
	dir string
	// heads are the branches, "main" and reflux's.
	heads []string
}

func (w *world) clone(name string) (*clone, error) {
	dir, err := os.MkdirTemp("", "soak-check-")
	if err != nil {
		return nil, err
	}
	if _, err := git("", "clone", "-q", "--no-checkout", w.repoURL(name), dir); err != nil {
		return nil, err
	}
	out, err := git(dir, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin")
	if err != nil {
		return nil, err
	}
	c := &clone{dir: dir}
	for _, h := range strings.Fields(out) {
		if h != "HEAD" {
			c.heads = append(c.heads, h)
		}
	}
	return c, nil
}

func (c *clone) remove() { _ = os.RemoveAll(c.dir) } // scratch space

// mergeLine matches a flag the soak added, as reflux writes it back.
var mergeLine = regexp.MustCompile(`SOAK_M[0-9]+: "?v[0-9]+"?`)

// flags returns every soak flag, "SOAK_Mn: vn", declared at the tip of
// any branch.
func (c *clone) flags() (map[string]bool, error) {
	out := map[string]bool{}
	for _, h := range c.heads {
		text, err := git(c.dir, "grep", "-h", "-o", "-E", mergeLine.String(), "origin/"+h, "--")
		if err != nil && !strings.Contains(err.Error(), "exit status 1") { // 1: no match
			return nil, err
		}
		for _, m := range mergeLine.FindAllString(text, -1) {
			out[strings.ReplaceAll(m, `"`, "")] = true
		}
	}
	return out, nil
}

// isAncestor reports whether commit is in the history of branch.
func (c *clone) isAncestor(commit, branch string) bool {
	_, err := git(c.dir, "merge-base", "--is-ancestor", commit, "origin/"+branch)
	return err == nil
}

// has reports whether the clone has branch.
func (c *clone) has(branch string) bool {
	for _, h := range c.heads {
		if h == branch {
			return true
		}
	}
	return false
}

// history is every commit's patch on every branch, and separately those
// of commits main does not have: where reflux's own writes are.
func (c *clone) history() (all, offMain string, err error) {
	if all, err = git(c.dir, "log", "-p", "--all"); err != nil {
		return "", "", err
	}
	offMain, err = git(c.dir, "log", "-p", "--all", "--not", "origin/main")
	return all, offMain, err
}
