package release

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
)

func TestIgnorePaths(t *testing.T) {
	deploy := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\n  labels:\n    tier: frontend\n  annotations:\n    team: a\n")
	cm := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\n  namespace: apps\n")
	rules := func(r ...helmv2.IgnoreRule) []helmv2.IgnoreRule { return r }
	rule := func(target *kustomize.Selector, paths ...string) helmv2.IgnoreRule {
		return helmv2.IgnoreRule{Paths: paths, Target: target}
	}
	tests := []struct {
		name       string
		rules      []helmv2.IgnoreRule
		deploy, cm []string
		wantErr    bool
	}{
		{name: "no rules"},
		{name: "a rule without a target selects every object", rules: rules(rule(nil, "/spec/replicas")),
			deploy: []string{"/spec/replicas"}, cm: []string{"/spec/replicas"}},
		{name: "by kind", rules: rules(rule(&kustomize.Selector{Kind: "ConfigMap"}, "/data/greeting")),
			cm: []string{"/data/greeting"}},
		{name: "by group and version", rules: rules(rule(&kustomize.Selector{Group: "apps", Version: "v1"}, "/spec/replicas")),
			deploy: []string{"/spec/replicas"}},
		{name: "names are anchored regular expressions", rules: rules(
			rule(&kustomize.Selector{Name: "web"}, "/a"), rule(&kustomize.Selector{Name: "web-.*"}, "/b")),
			deploy: []string{"/a"}, cm: []string{"/b"}},
		{name: "by namespace", rules: rules(rule(&kustomize.Selector{Namespace: "other"}, "/a"), rule(&kustomize.Selector{Namespace: "apps"}, "/b")),
			deploy: []string{"/b"}, cm: []string{"/b"}},
		{name: "by label and annotation selector", rules: rules(
			rule(&kustomize.Selector{LabelSelector: "tier=frontend"}, "/l"),
			rule(&kustomize.Selector{AnnotationSelector: "team in (a,b)"}, "/a")),
			deploy: []string{"/l", "/a"}},
		{name: "rules add up in order", rules: rules(rule(nil, "/x", "/y"), rule(&kustomize.Selector{Kind: "Deployment"}, "/z")),
			deploy: []string{"/x", "/y", "/z"}, cm: []string{"/x", "/y"}},
		{name: "the whole object", rules: rules(rule(&kustomize.Selector{Kind: "ConfigMap"}, "")), cm: []string{""}},
		{name: "a broken selector is an error", rules: rules(rule(&kustomize.Selector{Name: "(("}, "/a")), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := IgnorePaths(tt.rules, deploy)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("driftDetection.ignore[0]")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.deploy))
			got, err = IgnorePaths(tt.rules, cm)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.cm))
		})
	}
}
