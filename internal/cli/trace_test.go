package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const corpus = "../../kustomize/testdata/"

func runTraceCmd(args ...string) (string, error) {
	cmd := NewTraceCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
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
			name: "generated ConfigMap by name without hash, all fields",
			args: []string{"--path", corpus + "configmap-generator/overlay", "ConfigMap/app-settings"},
			want: []string{
				"/data/DB_HOST  kustomize/testdata/configmap-generator/overlay/prod.env:1:1  generator-env",
				"/metadata/name  REFUSED  hash-suffix",
			},
		},
		{
			name: "substituteFrom stand-ins from --var",
			args: []string{"--path", corpus + "postbuild-substitution/apps", "--kustomization", corpus + "postbuild-substitution/flux-kustomization.yaml",
				"--var", "CLUSTER_NAME=eu-1", "Deployment/billing", "/spec/template/spec/containers/0/env/1/value"},
			want: []string{"Flag/--var  substitution", "  Flag/--var  substitution  (spec.postBuild.substituteFrom)  ${CLUSTER_NAME}"},
		},
		{
			name:    "unknown object",
			args:    []string{"--path", corpus + "plain-dir", "Deployment/nope"},
			wantErr: "object not rendered",
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
}
