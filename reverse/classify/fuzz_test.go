package classify

import (
	"errors"
	"path"
	"strings"
	"testing"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// FuzzRules compiles a policy rule from arbitrary globs and field
// patterns and classifies an arbitrary field with it. New may refuse, and
// then its error names the rule and glob; what it accepts must classify
// every field without panicking, and no accepted glob may turn out
// malformed at match time, where the error would be lost.
func FuzzRules(f *testing.F) {
	f.Add("apps/*/config.yaml", "/data/*", "apps/web/config.yaml", "/data/FLAG")
	f.Add("apps/[a-", "/spec/template/spec/containers/*/image", "apps/a", "/spec/template/spec/containers/0/image")
	f.Add("**/x\\", "/*/*", "a/b/x", "/a/b")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, glob, field, file, pointer string) {
		spec := &refluxv1.ReverseSyncPolicySpec{Rules: []refluxv1.Rule{{
			Name: "r", Paths: []string{glob}, Fields: []string{field}, Action: refluxv1.MergeAction,
		}}}
		c, err := New(spec)
		if err != nil {
			if !errors.Is(err, path.ErrBadPattern) || !strings.Contains(err.Error(), "spec.rules[0].paths[0]") {
				t.Fatalf("refusal %v does not name the glob and its cause", err)
			}
			return
		}
		if _, err := path.Match(glob, file); err != nil {
			t.Fatalf("accepted glob %q is malformed against %q: %v", glob, file, err)
		}
		d := c.Classify(Field{Kind: "ConfigMap", Pointer: pointer, ChangeType: refluxv1.ChangeUpdate, OriginFile: file})
		if d.Action == "" || d.Severity == "" {
			t.Fatalf("decision %+v lacks an action or severity", d)
		}
	})
}
