package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/kustomize/origin"
)

const corpus = "../../kustomize/testdata/"

func runTraceCmd(args ...string) (string, error) {
	out, _, err := runTraceCmdErr(args...)
	return out, err
}

func runTraceCmdErr(args ...string) (string, string, error) {
	cmd := NewTraceCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestTrace(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{
			name: "one pointer prints origin then chain",
			args: []string{"--path", corpus + "base-overlays/overlays/prod", "Deployment/prod/podinfo", "/spec/replicas"},
			want: []string{
				"kustomize/testdata/base-overlays/overlays/prod/kustomization.yaml:10:12  replicas",
				"  kustomize/testdata/base-overlays/base/deployment.yaml:6:13  resource",
				"  kustomize/testdata/base-overlays/overlays/prod/kustomization.yaml:10:12  replicas  (replicas[0].count)",
			},
		},
		{
			name: "flux kustomization spec applies, its path ignored for --path",
			args: []string{"--path", corpus + "flux-spec/app", "--kustomization", corpus + "flux-spec/flux-kustomization.yaml", "deployment/web-prod/prod-web", "spec/replicas"},
			want: []string{"kustomize/testdata/flux-spec/flux-kustomization.yaml:29:21  kustomization-spec"},
		},
		{
			name: "a file of several Kustomizations without #NAME: --path picks the one whose spec.path it is",
			args: []string{"--path", corpus + "cluster-multi-doc/apps", "--kustomization", corpus + "cluster-multi-doc/flux-kustomization.yaml",
				"Deployment/podinfo", "/spec/replicas"},
			want: []string{"kustomize/testdata/cluster-multi-doc/flux-kustomization.yaml:59:21  kustomization-spec"},
		},
		{
			name: "a file of several Kustomizations none of whose spec.path is --path is refused, spelling out FILE#NAMESPACE/NAME",
			args: []string{"--path", corpus + "cluster-multi-doc/apps/podinfo", "--kustomization", corpus + "cluster-multi-doc/flux-kustomization.yaml",
				"Deployment/podinfo"},
			wantErr: "none has spec.path kustomize/testdata/cluster-multi-doc/apps/podinfo; name one as FILE#NAME or FILE#NAMESPACE/NAME, e.g. " +
				corpus + "cluster-multi-doc/flux-kustomization.yaml#flux-system/infra-configs",
		},
		{
			name: "generated ConfigMap by name without hash, all fields",
			args: []string{"--path", corpus + "configmap-generator/overlay", "ConfigMap/app-settings"},
			want: []string{
				"/data/DB_HOST  kustomize/testdata/configmap-generator/overlay/prod.env:1:1  generator-env",
				"/metadata/name  REFUSED  hash-suffix  edit kustomize/testdata/configmap-generator/base/kustomization.yaml:4:11  (configMapGenerator[0].name)",
			},
		},
		{
			name: "substituteFrom stand-ins from --var",
			args: []string{"--path", corpus + "postbuild-substitution/apps", "--kustomization", corpus + "postbuild-substitution/flux-kustomization.yaml",
				"--var", "CLUSTER_NAME=eu-1", "Deployment/billing", "/spec/template/spec/containers/0/env/1/value"},
			want: []string{"Flag/--var  substitution", "  Flag/--var  substitution  (spec.postBuild.substituteFrom)  ${CLUSTER_NAME}"},
		},
		{
			name: "a refused field prints the reason, why, and where to edit instead",
			args: []string{"--path", corpus + "env-file-bare-keys", "Deployment/checkout/checkout", "/spec/template/spec/containers/0/envFrom/0/configMapRef/name"},
			want: []string{
				"REFUSED  hash-suffix",
				"  why:  " + origin.ReasonHashSuffix.Why(),
				"  edit: kustomize/testdata/env-file-bare-keys/kustomization.yaml:7:11  (configMapGenerator[0].name)",
			},
		},
		{
			name: "a listing names where to edit, and a legend says why",
			args: []string{"--path", corpus + "env-file-bare-keys", "ConfigMap/checkout/checkout-env"},
			want: []string{
				"/metadata/name  REFUSED  hash-suffix  edit kustomize/testdata/env-file-bare-keys/kustomization.yaml:7:11  (configMapGenerator[0].name)",
				"# hash-suffix: " + origin.ReasonHashSuffix.Why(),
				"# paths relative to the repository root " + repoRoot(),
			},
		},
		{
			name:    "unknown object",
			args:    []string{"--path", corpus + "plain-dir", "Deployment/nope"},
			wantErr: "object not rendered",
		},
		{
			name:    "an object in another namespace is named",
			args:    []string{"--path", corpus + "base-overlays/overlays/prod", "Deployment/staging/podinfo"},
			wantErr: "closest rendered: Deployment.apps/prod/podinfo",
		},
		{
			name:    "an object a remote base would render is refused, naming the resources entry",
			args:    []string{"--path", corpus + "remote-base/overlay", "StatefulSet/cache/redis"},
			wantErr: "refused: remote-base: " + origin.ReasonRemoteBase.Why() + " Edit kustomize/testdata/remote-base/overlay/kustomization.yaml:5:5 (resources[0]) instead.",
		},
		{
			name:    "unknown pointer",
			args:    []string{"--path", corpus + "plain-dir", "Deployment/web", "/spec/nope"},
			wantErr: "field not found",
		},
		{
			name:    "bad object",
			args:    []string{"--path", corpus + "plain-dir", "web"},
			wantErr: "not KIND/[NAMESPACE/]NAME",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := runTraceCmd(tt.args...)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(strings.Count(err.Error(), "\n")).To(BeZero())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, w := range tt.want {
				g.Expect(lines).To(ContainElement(w))
			}
		})
	}
}

// repoRoot is the git work tree the tests run in.
func repoRoot() string {
	wd, _ := os.Getwd()
	return gitRoot(wd)
}

// TestTraceOutput covers what a user reads: paths relative to where they
// stand, a one-step chain printed once, each krusty warning once.
func TestTraceOutput(t *testing.T) {
	t.Run("paths relative to the current directory when the files are under it", func(t *testing.T) {
		g := NewWithT(t)
		t.Chdir(corpus + "base-overlays")
		out, err := runTraceCmd("--path", "overlays/prod", "Deployment/prod/podinfo", "/spec/replicas")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{
			"# paths relative to the current directory",
			"overlays/prod/kustomization.yaml:10:12  replicas",
			"  base/deployment.yaml:6:13  resource",
			"  overlays/prod/kustomization.yaml:10:12  replicas  (replicas[0].count)",
		}))
	})
	t.Run("a one-step chain is printed once", func(t *testing.T) {
		g := NewWithT(t)
		out, err := runTraceCmd("--path", corpus+"base-overlays/overlays/prod", "Deployment/prod/podinfo", "/spec/template/spec/containers/0/name")
		g.Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines).To(HaveLen(2))
		g.Expect(lines[1]).To(Equal("kustomize/testdata/base-overlays/base/deployment.yaml:16:17  resource"))
	})
	t.Run("a deprecation warning is printed once per run", func(t *testing.T) {
		g := NewWithT(t)
		_, stderr, err := runTraceCmdErr("--path", corpus+"base-overlays/overlays/prod", "Deployment/prod/podinfo")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Count(stderr, "'commonLabels' is deprecated")).To(Equal(1), stderr)
	})
}

func TestTraceJSON(t *testing.T) {
	g := NewWithT(t)
	out, err := runTraceCmd("--path", corpus+"unmodelled", "-o", "json", "Deployment/app")
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(len(lines)).To(BeNumerically(">", 3))
	seen := map[string]map[string]interface{}{}
	for _, l := range lines {
		var rec map[string]interface{}
		g.Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed())
		g.Expect(rec).To(HaveKey("chain"))
		g.Expect(rec["object"]).To(Equal("Deployment/app"))
		seen[rec["pointer"].(string)] = rec
	}
	g.Expect(seen["/spec/template/spec/containers/0/image"]["refused"]).To(Equal("replacements"))
	g.Expect(seen["/metadata/name"]["file"]).To(Equal("kustomize/testdata/unmodelled/app.yaml"))
	g.Expect(seen["/metadata/name"]["line"]).To(BeEquivalentTo(11))
	g.Expect(seen["/metadata/name"]["column"]).To(BeEquivalentTo(9))
	g.Expect(seen["/metadata/name"]["refused"]).To(Equal(""))
	g.Expect(seen["/metadata/name"]).NotTo(HaveKey("why"))
	g.Expect(seen["/spec/template/spec/containers/0/image"]["why"]).To(Equal(origin.ReasonReplacements.Why()))
	g.Expect(seen["/spec/template/spec/containers/0/image"]["edit"]).To(HaveKeyWithValue("file", "kustomize/testdata/unmodelled/kustomization.yaml"))
	g.Expect(seen["/spec/template/spec/containers/0/image"]["edit"]).To(HaveKeyWithValue("via", "replacements"))
}
