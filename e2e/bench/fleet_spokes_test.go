package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	// spokeSecret is, in each spoke's hub namespace, the kubeconfig
	// Secret its Kustomization names.
	spokeSecret = "spoke-kubeconfig"
	// spokeHubUser is the spoke's user that Secret connects as: Flux and
	// reflux alike, as a hub connects to each spoke with an admin identity
	// of its own.
	spokeHubUser = "hub"
)

// startSpoke starts a remote cluster: a kube-apiserver and etcd with no
// Flux and no reflux CRDs, whose audit log has lists and watches too,
// and a recorder answering its audit webhook. stop stops both, the
// apiserver first, as it sends to the recorder until it stops.
func startSpoke(ctx context.Context) (*testenv.Env, func() error, error) {
	spoke, err := testenv.Start(ctx, testenv.Options{WithoutFlux: true, WithoutRefluxCRDs: true,
		StartTimeout: 2 * time.Minute, AuditWebhook: &testenv.AuditWebhook{Reads: true}})
	if err != nil {
		return nil, nil, fmt.Errorf("starting a spoke: %w", err)
	}
	rec, err := testenv.StartAuditRecorder(spoke)
	if err != nil {
		return nil, nil, errors.Join(err, spoke.Stop())
	}
	return spoke, func() error { return errors.Join(spoke.Stop(), rec.Close()) }, nil
}

// createSpokeApp creates spoke k's namespace in both clusters, the hub's
// kubeconfig Secret for it, and an app (fixture.CreateApp) whose one
// Kustomization applies tree's Kustomization k to the spoke, without
// waiting for Flux.
func (r *fleetRun) createSpokeApp(ctx context.Context, k int, spoke *testenv.Env) error {
	ns := r.c.tree.namespace(k)
	if err := spoke.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	if err := r.hub.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	u, err := spoke.AddUser(spokeHubUser, "system:masters")
	if err != nil {
		return err
	}
	kubeconfig, err := os.ReadFile(u.KubeconfigPath)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: spokeSecret},
		Data: map[string][]byte{"value": kubeconfig}}
	if err := r.hub.Client.Create(ctx, secret); err != nil {
		return err
	}
	// No periodic reconcile, of Flux or of reflux's resync, lands in the
	// run; Flux's default timeout is the interval.
	_, err = fixture.CreateApp(ctx, r.hub, ns, fixture.AppOptions{
		Files: map[string]string{
			"kustomization.yaml": fixture.Kustomization("resources.yaml"),
			"resources.yaml":     r.c.tree.resources(k),
		},
		SourceInterval: 6 * time.Hour, Interval: 6 * time.Hour, ReportOnly: true, Unready: true,
		Kustomization: func(ks *kustomizev1.Kustomization) {
			ks.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: spokeSecret}}
			ks.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
		},
	})
	return err
}

// observeSpoke feeds the spoke's ConfigMaps that Flux applied to o, as
// o's own watches feed it the hub's, and waits until the watch has
// synced.
func observeSpoke(ctx context.Context, o *observer, spoke *testenv.Env) error {
	flux, err := labels.Parse("kustomize.toolkit.fluxcd.io/name")
	if err != nil {
		return err
	}
	c, err := ctrlcache.New(spoke.Config, ctrlcache.Options{Scheme: spoke.Scheme,
		ByObject: map[client.Object]ctrlcache.ByObject{&corev1.ConfigMap{}: {Label: flux}}})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching the spoke's ConfigMaps: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.observe(obj) },
		UpdateFunc: func(_, obj any) { o.observe(obj) },
	}); err != nil {
		return err
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			fmt.Println("benchmark watch of a spoke stopped:", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's watch of a spoke's ConfigMaps did not sync")
	}
	return nil
}

// openWatches counts, by resource, the watches reflux holds open in
// spoke k, from the spoke's audit log.
func (r *fleetRun) openWatches(k int) (watchCount, error) {
	evs, err := r.spokes[k].AuditEvents(func(e auditv1.Event) bool {
		return e.User.Username == spokeHubUser && strings.HasPrefix(e.UserAgent, "reflux") && e.Verb == "watch"
	})
	if err != nil {
		return nil, err
	}
	return countOpen(evs), nil
}

// watchCount is the number of watch connections open, by resource.
type watchCount map[string]int

// countOpen counts the watches evs started and did not complete, by
// resource. The audit log is written before each stage's response, so
// a watch that ended has both its stages there.
func countOpen(evs []auditv1.Event) watchCount {
	open := watchCount{}
	for _, e := range evs {
		res := "?"
		if e.ObjectRef != nil {
			res = e.ObjectRef.Resource
			if e.ObjectRef.APIGroup != "" {
				res += "." + e.ObjectRef.APIGroup
			}
		}
		switch e.Stage {
		case auditv1.StageResponseStarted:
			open[res]++
		case auditv1.StageResponseComplete:
			open[res]--
		}
	}
	maps.DeleteFunc(open, func(_ string, n int) bool { return n == 0 })
	return open
}

// total is every open watch.
func (w watchCount) total() int {
	n := 0
	for _, c := range w {
		n += c
	}
	return n
}

// String is e.g. "2 (configmaps 1, deployments.apps 1)".
func (w watchCount) String() string {
	var parts []string
	for _, res := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s %d", res, w[res]))
	}
	return fmt.Sprintf("%d (%s)", w.total(), strings.Join(parts, ", "))
}
