package faithful

import (
	"context"
	"fmt"
	"sort"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/internal/testenv"
)

// setup renders every case with reflux and hands it to Flux: one git
// repository per tree, and per case a namespace holding its GitRepository,
// Kustomization and substituteFrom sources. The sources are created while
// reflux renders, so source-controller fetches them meanwhile. It does not
// wait for Flux.
func setup(ctx context.Context) ([]*fluxCase, error) {
	all, err := loadCorpus()
	if err != nil {
		return nil, err
	}
	sources := make(chan error, 1)
	go func() { sources <- createSources(ctx, all) }()
	owners := map[string]string{}
	for _, c := range all {
		// A tree reflux cannot build is still handed to Flux: the case
		// then checks that Flux cannot build it either.
		c.BuildErr = render(ctx, c)
		if c.BuildErr != nil {
			continue
		}
		// Two cases applying one object would fight over it.
		for _, id := range renderedIDs(c.Render.Objects) {
			if other, ok := owners[id]; ok {
				<-sources
				return nil, fmt.Errorf("cases %s and %s both render %s", other, c.Name, id)
			}
			owners[id] = c.Name
		}
	}
	if err := <-sources; err != nil {
		return nil, err
	}
	created := map[string]bool{}
	for _, c := range all {
		created[c.Namespace] = true
	}
	for _, c := range all {
		if err := submit(ctx, c, created); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return all, nil
}

// createSources pushes every tree to its repository and creates each
// case's namespace, substituteFrom sources and GitRepository.
func createSources(ctx context.Context, all []*fluxCase) error {
	pushed := map[string]bool{}
	for _, c := range all {
		if !pushed[c.Tree] {
			if _, err := env.Git.PushDir(ctx, c.Repo(), c.Root()); err != nil {
				return err
			}
			pushed[c.Tree] = true
		}
		if err := env.CreateNamespace(ctx, c.Namespace); err != nil {
			return err
		}
		for _, src := range c.SubstituteFrom {
			if err := env.Client.Create(ctx, substituteSource(src.Kind, src.Name, c.Namespace, src.Data)); err != nil {
				return fmt.Errorf("creating substituteFrom %s/%s: %w", src.Kind, src.Name, err)
			}
		}
		_, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{
			Name: c.Tree, Namespace: c.Namespace, Repo: c.Repo(),
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// render builds the case with reflux. kustomize-controller cannot apply a
// namespaced object without a namespace (ssa: "namespace not specified"),
// so a case whose render has one gets spec.targetNamespace set to the
// case's own namespace, for reflux and Flux alike, and is built again.
func render(ctx context.Context, c *fluxCase) error {
	res, err := c.build(ctx)
	if err != nil {
		return err
	}
	c.Render = res
	if c.Kustomization.Spec.TargetNamespace != "" {
		return nil
	}
	for _, obj := range res.Objects {
		namespaced, err := env.Client.IsObjectNamespaced(obj)
		if err != nil {
			return fmt.Errorf("%s: scope of %s: %w", c.Name, obj.GroupVersionKind(), err)
		}
		if namespaced && obj.GetNamespace() == "" {
			c.Kustomization.Spec.TargetNamespace = c.Namespace
			c.Render, err = c.build(ctx)
			return err
		}
	}
	return nil
}

// submit creates the namespaces the case's render targets but does not
// create itself, then the Kustomization with the case's spec.
func submit(ctx context.Context, c *fluxCase, created map[string]bool) error {
	var objs []*unstructured.Unstructured
	if c.Render != nil {
		objs = c.Render.Objects
	}
	for _, ns := range renderNamespaces(objs) {
		if created[ns] {
			continue
		}
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return err
		}
		created[ns] = true
	}
	_, err := env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: c.Kustomization.Name, Namespace: c.Namespace, Source: c.Tree,
		Customize: func(k *kustomizev1.Kustomization) { k.Spec = fluxSpec(c, k.Spec) },
	})
	return err
}

// fluxSpec is the case's spec, pointed at the case's GitRepository and
// with the harness's short retry interval; neither changes the build.
func fluxSpec(c *fluxCase, harness kustomizev1.KustomizationSpec) kustomizev1.KustomizationSpec {
	spec := c.Kustomization.Spec.DeepCopy()
	spec.SourceRef = harness.SourceRef
	spec.RetryInterval = harness.RetryInterval
	if spec.Interval.Duration == 0 {
		spec.Interval = harness.Interval
	}
	return *spec
}

// renderNamespaces returns the namespaces the objects live in, less those
// the render creates itself (Flux applies a Namespace before its objects).
func renderNamespaces(objs []*unstructured.Unstructured) []string {
	own := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" {
			own[o.GetName()] = true
		}
	}
	set := map[string]bool{}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && !own[ns] {
			set[ns] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// substituteSource is a ConfigMap or Secret holding substituteFrom data.
func substituteSource(kind, name, namespace string, data map[string]string) client.Object {
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	if kind == "Secret" {
		return &corev1.Secret{ObjectMeta: meta, StringData: data}
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: data}
}
