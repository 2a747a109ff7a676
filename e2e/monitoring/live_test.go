package monitoring

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	ns      = "checkout"
	team    = "payments"
	timeout = 3 * time.Minute
	poll    = 500 * time.Millisecond
)

// TestKitNamesOnlyWhatRefluxExports runs the real reflux binary with
// --team-label=team, drives a drift that writes a branch and a manual
// hotfix through it, and holds every expression of the dashboard and the
// rules against what its /metrics then exports. On the way it checks the
// hotfix is counted once: not again on resync, nor after a restart.
func TestKitNamesOnlyWhatRefluxExports(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := liveEnv(t)
	setupCheckout(t, e)
	r := startReflux(t, e)
	// Edit once reflux governs the Kustomization and watches its objects,
	// so the edits come through the live watch and are timed.
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(0.0))
	}, timeout, poll).Should(Succeed(), "reflux reports the Kustomization, with its team")

	editLive(t, e, "checkout-flags", nil, "EXPRESS_SHIPPING", "true") // an Alert: a branch that needs a decision
	editLive(t, e, "checkout-limits", map[string]string{refluxv1.DefaultManualHotfixKey: refluxv1.DefaultManualHotfixValue},
		"REQUESTS_PER_SECOND", "800")

	var m testenv.Metrics
	g.Eventually(func(g Gomega) {
		var err error
		m, err = r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_manual_hotfixes_total", map[string]string{"namespace": ns, "team": team})).To(Equal(1.0))
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(2.0))
		g.Expect(value(m, "reflux_drift_fields", map[string]string{"namespace": ns, "kustomization": "checkout", "team": team, "kind": "ConfigMap"})).To(BeNumerically(">=", 1))
		g.Expect(value(m, "reflux_writeback_total", map[string]string{"result": refluxv1.BranchPushedReason})).To(BeNumerically(">=", 1))
		g.Expect(value(m, "reflux_pending_branches", map[string]string{"namespace": ns})).To(BeNumerically(">=", 1))
		timed, _ := m.Sum("reflux_drift_detection_latency_seconds")
		g.Expect(timed).To(BeNumerically(">=", 2), "both live edits were timed")
	}, timeout, poll).Should(Succeed(), "reflux exports the drift, the hotfix and the write-back")

	ex := exportedBy(m)
	exprs := kitExpressions(t)
	g.Expect(len(exprs)).To(BeNumerically(">", 20), "the dashboard's panels and variables, and the three alerts")
	for _, x := range exprs {
		problems, err := unexportedReferences(x.expr, ex)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", x.where, x.expr)
		g.Expect(problems).To(BeEmpty(), "%s: %s", x.where, x.expr)
	}

	// Resyncs evaluate the hotfixed object again (a 3s interval): the
	// record is already marked, so the use is not counted again.
	resyncs := dryRuns(m, "resync")
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(dryRuns(m, "resync")).To(BeNumerically(">=", resyncs+2))
		g.Expect(value(m, "reflux_manual_hotfixes_total", map[string]string{"namespace": ns, "team": team})).To(Equal(1.0))
	}, timeout, poll).Should(Succeed())

	// A restart re-evaluates everything against records already marked.
	g.Expect(r.Stop()).To(Succeed())
	r = startReflux(t, e)
	g.Eventually(func(g Gomega) {
		m, err := r.Metrics(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(value(m, "reflux_held_objects", map[string]string{"namespace": ns, "team": team})).To(Equal(2.0))
		g.Expect(dryRuns(m, "resync")).To(BeNumerically(">=", 2), "the restarted reflux evaluated the drifted objects")
		_, counted := m["reflux_manual_hotfixes_total"]
		g.Expect(counted).To(BeFalse(), "no hotfix is new to a restarted reflux")
	}, timeout, poll).Should(Succeed())
}

// kitExpressions are the dashboard's and the rules' expressions.
func kitExpressions(t *testing.T) []expression {
	t.Helper()
	dash, err := dashboardExpressions(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	rules, _, err := ruleExpressions(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	return append(dash, rules...)
}

// exportedBy lists the series names of a scrape with their label names.
func exportedBy(m testenv.Metrics) exported {
	ex := exported{}
	add := func(name string, labels []string, extra ...string) {
		ex[name] = append(slices.Clone(labels), extra...)
	}
	for name, f := range m {
		var labels []string
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			add(name+"_bucket", labels, "le")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		case dto.MetricType_SUMMARY:
			add(name, labels, "quantile")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	return ex
}

// value is the value of the one series of family name with the labels
// want (and any others), or -1 when there is none.
func value(m testenv.Metrics, name string, want map[string]string) float64 {
	for _, s := range m[name].GetMetric() {
		got := map[string]string{}
		for _, l := range s.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		if s.Gauge != nil {
			return s.GetGauge().GetValue()
		}
		return s.GetCounter().GetValue()
	}
	return -1
}

func dryRuns(m testenv.Metrics, path string) float64 {
	return max(value(m, "reflux_dry_runs_total", map[string]string{"path": path}), 0)
}

// setupCheckout pushes the checkout app, lets Flux apply it under a
// Kustomization labelled with its team, and governs it with a policy that
// signs branches.
func setupCheckout(t *testing.T, e *testenv.Env) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	_, err := e.Git.PushDir(ctx, "checkout.git", "testdata/app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.CreateNamespace(ctx, ns)).To(Succeed())
	src, err := e.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "checkout", Namespace: ns, Repo: "checkout.git",
		Interval: 2 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	ks, err := e.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "checkout", Namespace: ns, Source: src.Name, Path: "./", TargetNamespace: ns, Prune: true,
		// A short interval drives reflux's resync.
		Interval: 3 * time.Second,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{"reflux.dev/tier": "checkout", "team": team}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.WaitForReady(ctx, src)).To(Succeed())
	g.Expect(e.WaitForReady(ctx, ks)).To(Succeed())

	secret := &corev1.Secret{Data: map[string][]byte{"git.asc": signingKey(t)}}
	secret.Name, secret.Namespace = "reflux-signing-key", ns
	g.Expect(e.Client.Create(ctx, secret)).To(Succeed())
	p := &refluxv1.ReverseSyncPolicy{}
	p.Name, p.Namespace = "checkout", ns
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "checkout"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: refluxv1.OpenPGPSigningKey}
	p.Spec.Git.SigningKey.SecretRef.Name = secret.Name
	g.Expect(e.Client.Create(ctx, p)).To(Succeed())
}

// startReflux runs the real binary with the team label, as a platform team
// would, and stops it when the test ends.
func startReflux(t *testing.T, e *testenv.Env) *testenv.RefluxProcess {
	t.Helper()
	r, err := testenv.StartReflux(context.Background(), e, testenv.RefluxOptions{Args: []string{
		"--team-label=team", "--insecure-allow-http", "--concurrent=2",
		"--git-cache-dir=" + filepath.Join(e.Dir, "reflux-git"),
	}})
	if err != nil {
		t.Fatalf("starting reflux (make test builds it first): %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := r.Log(); err == nil {
				t.Logf("reflux log:\n%s", tail(log, 64<<10))
			}
		}
		if err := r.Stop(); err != nil {
			t.Errorf("stopping reflux: %v", err)
		}
	})
	return r
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// editLive sets key to value in a live ConfigMap as `kubectl edit` does,
// adding annotations first.
func editLive(t *testing.T, e *testenv.Env, name string, annotations map[string]string, key, value string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		for k, v := range annotations {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[k] = v
		}
		cm.Data[key] = value
		return e.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))
	}, timeout, poll).Should(Succeed())
}

// signingKey is an armored OpenPGP private key, as the policy's signing
// Secret holds it.
func signingKey(t *testing.T) []byte {
	t.Helper()
	ent, err := openpgp.NewEntity("reflux", "monitoring", "reflux@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ent.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
