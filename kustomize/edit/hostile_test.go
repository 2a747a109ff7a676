package edit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
)

// hostile turns plain-dir's deployment.yaml into YAML that editors and
// parsers trip over. Each keeps the Deployment's meaning, so an edit of
// it must either land exactly or be refused with a cause; none may hang,
// crash, or lose what the file had (its BOM, its line endings, its
// comments).
var hostile = []struct {
	name string
	mut  func([]byte) []byte
}{
	{"byte order mark", func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), b...) }},
	{"CRLF line endings", func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }},
	{"anchors and aliases", func(b []byte) []byte {
		s := strings.Replace(string(b), "    app: web\nspec:", "    app: &app web\nspec:", 1)
		return []byte(strings.Replace(s, "      app: web\n  template", "      app: *app\n  template", 1))
	}},
	{"a one-megabyte line", func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "value: 'production'", "value: '"+strings.Repeat("p", 1<<20)+"'", 1))
	}},
	{"billion laughs beside it", func(b []byte) []byte {
		var s strings.Builder
		s.Write(b)
		s.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  a: &a \"lol\"\n")
		prev := "a"
		for i := 0; i < 9; i++ {
			n := string(rune('b' + i))
			s.WriteString("  " + n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n")
			prev = n
		}
		return []byte(s.String())
	}},
}

var webDeployment = origin.ObjectRef{Group: "apps", Kind: "Deployment", Name: "web"}

// planHostile copies plain-dir with deployment.yaml mutated and plans one
// change, failing the test if planning takes longer than a build could.
func planHostile(t *testing.T, mut func([]byte) []byte, ch Change) (kustomize.BuildOptions, []byte, *Result, error) {
	t.Helper()
	work := t.TempDir()
	if err := kustomize.CopyTree(filepath.Join("..", "testdata", "plain-dir"), work); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(work, "deployment.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data = mut(data)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := buildOptions(t, caseSpec{}, work)
	type planned struct {
		res *Result
		err error
	}
	done := make(chan planned, 1)
	go func() {
		res, err := Plan(context.Background(), Options{Build: opts}, ch)
		done <- planned{res, err}
	}()
	select {
	case p := <-done:
		return opts, data, p.res, p.err
	case <-time.After(2 * time.Minute):
		t.Fatalf("planning %s %s did not return: a hang", ch.Object, ch.Pointer)
		return opts, nil, nil, nil
	}
}

func TestHostileYAML(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			ch := Change{Object: webDeployment, Pointer: "/spec/replicas", Value: int64(5)}
			opts, before, res, err := planHostile(t, tc.mut, ch)
			if tc.name == "billion laughs beside it" {
				if !errors.Is(err, kustomize.ErrExcessiveAliasing) || !strings.Contains(err.Error(), "deployment.yaml") {
					t.Fatalf("got %v, want a refusal naming deployment.yaml's aliasing", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused an ordinary edit: %v", err)
			}
			after := res.Files["deployment.yaml"]
			checkPlan(t, opts, res, ch.Object, ch.Pointer, ch.Value)
			// Nothing but the value moved: the file is the same bytes with
			// "replicas: 2" now "replicas: 5", BOM, CRLF, comments and all.
			want := bytes.Replace(before, []byte("replicas: 2"), []byte("replicas: 5"), 1)
			if !bytes.Equal(after, want) {
				t.Fatalf("the edit changed more than the value:\n%s", firstDifference(want, after))
			}
		})
	}
}

// TestHostileAliasedValueIsRefused: a value reached through an alias is
// declared at its anchor, and writing it there would change every alias
// of it too. The editor must refuse, naming why, rather than leave the
// re-render to fail on a dangling alias.
func TestHostileAliasedValueIsRefused(t *testing.T) {
	ch := Change{Object: webDeployment, Pointer: "/spec/selector/matchLabels/app", Value: "api"}
	_, _, _, err := planHostile(t, hostile[2].mut, ch)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "YAML") {
		t.Fatalf("got %v, want a refusal naming the YAML alias or anchor", err)
	}
}

func firstDifference(want, got []byte) string {
	n := 0
	for n < len(want) && n < len(got) && want[n] == got[n] {
		n++
	}
	lo := max(0, n-40)
	return "want …" + string(want[lo:min(len(want), n+40)]) + "…\n got …" + string(got[lo:min(len(got), n+40)]) + "…"
}

// FuzzHostileYAML applies one of the hostile forms to deployment.yaml,
// inserts an arbitrary line into it, and edits a mapped field. Building
// or planning may refuse; neither may hang or crash, and an accepted plan
// must re-render with exactly its change. A hang shows as the fuzzer's
// "fuzzing process hung", and as the test timeout when seeds run.
func FuzzHostileYAML(f *testing.F) {
	f.Add(uint8(0), uint16(3), "# a comment", uint16(2))
	f.Add(uint8(1), uint16(9), "x: &y [*y]", uint16(8))
	f.Add(uint8(2), uint16(1), "\ufeff---", uint16(0))
	f.Add(uint8(4), uint16(1), "", uint16(1))
	f.Fuzz(func(t *testing.T, form uint8, fieldN uint16, line string, at uint16) {
		if strings.ContainsAny(line, "\n") || len(line) > 4096 {
			return // one line, of a size a review could hold
		}
		mut := hostile[int(form)%len(hostile)].mut
		if int(form)%len(hostile) == 3 {
			// The one-megabyte line takes seconds per input; the fuzzer
			// reads a worker that slow as hung. 64 KiB is as long to the
			// editor's scanning, and keeps the fuzzer honest about hangs.
			mut = func(b []byte) []byte {
				return []byte(strings.Replace(string(b), "value: 'production'", "value: '"+strings.Repeat("p", 64<<10)+"'", 1))
			}
		}
		insert := func(b []byte) []byte {
			lines := bytes.SplitAfter(mut(b), []byte("\n"))
			i := int(at) % (len(lines) + 1)
			out := append([][]byte{}, lines[:i]...)
			out = append(out, []byte(line+"\n"))
			return bytes.Join(append(out, lines[i:]...), nil)
		}
		work := t.TempDir()
		if err := kustomize.CopyTree(filepath.Join("..", "testdata", "plain-dir"), work); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(work, "deployment.yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, insert(data), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := buildOptions(t, caseSpec{}, work)
		idx, _, err := origin.Build(context.Background(), opts)
		if err != nil {
			return // the build refuses it, as kustomize would
		}
		ref, field, ok := pickField(idx, int(fieldN))
		if !ok {
			return
		}
		value := fuzzValue(field.Value, line)
		res, err := Plan(context.Background(), Options{Build: opts}, Change{Object: ref, Pointer: field.Pointer, Value: value})
		if err != nil {
			return // refusing is always allowed
		}
		checkPlan(t, opts, res, ref, field.Pointer, value)
	})
}
