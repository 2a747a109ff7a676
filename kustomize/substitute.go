package kustomize

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

// SubstituteAnnotation is the label or annotation that opts a resource out
// of post-build substitution when set to "disabled".
const SubstituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"

// Variables returns the post-build variables in effect: the resolved
// substituteFrom sources in order (later wins), then spec.postBuild.substitute,
// which overrides them, with newlines removed as kustomize-controller does.
func Variables(opts BuildOptions) map[string]string {
	vars := map[string]string{}
	for _, src := range opts.SubstituteFrom {
		for k, v := range src.Data {
			vars[k] = strings.ReplaceAll(v, "\n", "")
		}
	}
	if ks := opts.Kustomization; ks != nil && ks.Spec.PostBuild != nil {
		for k, v := range ks.Spec.PostBuild.Substitute {
			vars[k] = strings.ReplaceAll(v, "\n", "")
		}
	}
	return vars
}

// substitute runs fluxcd/pkg/kustomize's SubstituteVariables in dry-run mode
// (it must not talk to a cluster) on a copy of the Kustomization whose inline
// substitute map already holds the resolved substituteFrom values. That gives
// the same variable precedence the controller computes from the cluster.
func substitute(ctx context.Context, opts BuildOptions, u unstructured.Unstructured, r *resource.Resource) (*resource.Resource, error) {
	vars := Variables(opts)
	ks := u.DeepCopy()
	if len(vars) > 0 {
		m := make(map[string]interface{}, len(vars))
		for k, v := range vars {
			m[k] = v
		}
		if err := unstructured.SetNestedField(ks.Object, m, "spec", "postBuild", "substitute"); err != nil {
			return nil, err
		}
	}
	always := opts.Kustomization.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	return generator.SubstituteVariables(ctx, nil, *ks, r,
		generator.SubstituteWithDryRun(true),
		generator.SubstituteWithStrict(opts.StrictSubstitutions),
		generator.SubstituteWithAlways(always))
}

// generatedResources reads back the resources list of the kustomization.yaml
// the generator just wrote.
func generatedResources(dirPath string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dirPath, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	return k.Resources, nil
}
