package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// promtool is the real promtool `make testbin` links into bin/.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "bin", "promtool"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		// make test builds it first (testbin), so this only happens to a
		// bare `go test`; CI must never skip the rules check.
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing in CI: run `make testbin`", p)
		}
		t.Skipf("%s missing: run `make testbin` (make test does)", p)
	}
	return p
}

// rulesDir writes the PrometheusRule's groups as a plain rules file beside
// a copy of the rules' unit tests, which name it.
func rulesDir(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	_, groups, err := ruleExpressions(rulesPath)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "reflux-rules.groups.yaml"), groups, 0o600)).To(Succeed())
	tests, err := os.ReadFile(rulesTestPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "reflux-rules.test.yaml"), tests, 0o600)).To(Succeed())
	return dir
}

// TestPromtoolCheckRules runs `promtool check rules` with its linter on
// the PrometheusRule's groups.
func TestPromtoolCheckRules(t *testing.T) {
	bin := promtool(t)
	dir := rulesDir(t)
	out, err := exec.Command(bin, "check", "rules", "--lint=all", "--lint-fatal", filepath.Join(dir, "reflux-rules.groups.yaml")).CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "promtool check rules:\n%s", out)
	NewWithT(t).Expect(string(out)).To(ContainSubstring("SUCCESS: 3 rules found"))
}

// TestPromtoolTestRules runs the rules' unit tests: series that fire each
// alert, and series that must not.
func TestPromtoolTestRules(t *testing.T) {
	bin := promtool(t)
	dir := rulesDir(t)
	cmd := exec.Command(bin, "test", "rules", "reflux-rules.test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "promtool test rules:\n%s", out)
	NewWithT(t).Expect(string(out)).To(ContainSubstring("SUCCESS"))
}
