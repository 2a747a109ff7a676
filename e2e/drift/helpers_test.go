package drift

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
)

func deployment(g Gomega, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	return d
}

func configMap(g Gomega, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// editAsAlice changes an object the way `kubectl edit` by alice does: a
// plain Update under field manager kubectl-edit (or the one given).
func editAsAlice(g Gomega, obj client.Object, manager string) {
	g.Expect(alice.Update(context.Background(), obj, client.FieldOwner(manager))).To(Succeed())
}

// recordFor waits for the drift record of an object to satisfy match.
func recordFor(g Gomega, kind, name string, match func(*refluxv1.Drift) error) *refluxv1.Drift {
	var found *refluxv1.Drift
	g.Eventually(func() error {
		list := &refluxv1.DriftList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			d := &list.Items[i]
			if d.Spec.Object.Kind == kind && d.Spec.Object.Name == name {
				found = d
				return match(d)
			}
		}
		return fmt.Errorf("no drift record for %s/%s yet", kind, name)
	}, timeout, interval).Should(Succeed())
	return found
}

func noRecordFor(kind, name string) error {
	list := &refluxv1.DriftList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, d := range list.Items {
		if d.Spec.Object.Kind == kind && d.Spec.Object.Name == name {
			return fmt.Errorf("unexpected drift record %s for %s/%s: %+v", d.Name, kind, name, d.Spec.Fields)
		}
	}
	return nil
}

func field(d *refluxv1.Drift, pointer string) (refluxv1.DriftField, error) {
	for _, f := range d.Spec.Fields {
		if f.Pointer == pointer {
			return f, nil
		}
	}
	var have []string
	for _, f := range d.Spec.Fields {
		have = append(have, f.Pointer)
	}
	return refluxv1.DriftField{}, fmt.Errorf("record %s has no field %s (has %s)", d.Name, pointer, strings.Join(have, ", "))
}

func isHeld(obj client.Object) bool { return testenv.Held(obj) }

// forceReconcile makes kustomize-controller reconcile now and waits for it.
func forceReconcile(g Gomega) {
	g.Expect(env.Reconcile(context.Background(), ks)).To(Succeed())
}

// kustomizationEvent waits for an event on the Kustomization.
func kustomizationEvent(g Gomega, reason, contains string) *corev1.Event {
	var found *corev1.Event
	g.Eventually(func() error {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			e := &list.Items[i]
			if e.InvolvedObject.Kind == "Kustomization" && e.InvolvedObject.Name == ksName &&
				e.Reason == reason && strings.Contains(e.Message, contains) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no %s event mentioning %q", reason, contains)
	}, timeout, interval).Should(Succeed())
	return found
}

func driftedCondition(g Gomega) (string, string, string) {
	k := ks.DeepCopy()
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k)).To(Succeed())
	c := conditions.Get(k, refluxv1.DriftedCondition)
	if c == nil {
		return "", "", ""
	}
	return string(c.Status), c.Reason, c.Message
}

// metric returns the value of a gauge or counter with the given labels.
func metric(name string, labels map[string]string) (float64, bool) {
	families, err := current.registry.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				if m.Gauge != nil {
					return m.GetGauge().GetValue(), true
				}
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
