package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// The Helm side of the hotfix: the same person scales the cache that the
// app's HelmRelease deploys (base/cache.yaml). helm-controller would
// correct the drift; reflux holds it with helm-controller's own key and
// traces the field through the chart to the values line in Git.
const (
	cacheName     = "cache"
	cacheReplicas = int32(4)
)

// scaleCache scales the chart's Deployment as oncallUser, waits until
// reflux has recorded and held it with the values line it comes from,
// and prints the record.
func (d *demo) scaleCache(ctx context.Context) error {
	c, err := d.oncall(ctx)
	if err != nil {
		return err
	}
	var before int32
	if err := editAs(ctx, c, objectKey(cacheName), &appsv1.Deployment{}, func(dep *appsv1.Deployment) {
		if dep.Spec.Replicas != nil {
			before = *dep.Spec.Replicas
		}
		dep.Spec.Replicas = new(cacheReplicas)
	}); err != nil {
		return err
	}
	p := &printer{w: d.opts.out}
	p.line("    %s scales deployment/%s, which helm-controller renders from HelmRelease %s/%s: replicas %d -> %d",
		oncallUser, cacheName, appNamespace, cacheName, before, cacheReplicas)
	err = d.waitFor(ctx, recordTimeout, "waiting for the cache's record with its values line", func(ctx context.Context) error {
		rec, err := d.heldRecord(ctx, "Deployment", cacheName, replicasPtr)
		if err != nil {
			return err
		}
		if f := fieldOf(rec, replicasPtr); f.Origin == nil || f.Origin.File == "" {
			return fmt.Errorf("Drift %s/%s does not name the values line of %s yet", rec.Namespace, rec.Name, replicasPtr)
		}
		d.scenario.cacheRecord = rec
		return nil
	})
	if err != nil {
		return err
	}
	rec := d.scenario.cacheRecord
	fmt.Fprintln(d.opts.out)
	printRecord(d.opts.out, rec)
	f := fieldOf(rec, replicasPtr)
	p.line("        values  %s, rendered by the chart's %s", strings.Join(f.Origin.ValuesKeys, ", "), f.Origin.Template)
	p.line("        helm    HelmRelease %s/%s, release %s; held with %s: %s",
		rec.Spec.HelmRelease.Namespace, rec.Spec.HelmRelease.Name, rec.Spec.HelmRelease.Release,
		refluxv1.HelmDriftDetectionAnnotation, refluxv1.HelmDriftDetectionDisabled)
	return nil
}
