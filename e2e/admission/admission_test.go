package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

const fluxNameLabel = "kustomize.toolkit.fluxcd.io/name"

// configMap returns a ConfigMap; managed ones carry Flux's labels.
func configMap(name string, managed bool, annotations map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Annotations: annotations}, Data: map[string]string{"k": "v"}}
	if managed {
		cm.Labels = map[string]string{fluxNameLabel: "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	}
	return cm
}

// waitForPolicy waits until the apiserver enforces both policies: their
// bindings take effect once its policy informers have synced.
func waitForPolicy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		probe := configMap(fmt.Sprintf("probe-%d", i), true, map[string]string{refluxv1.DefaultManualHotfixKey: "manual"})
		hotfixErr := bob.Create(ctx, probe)
		record := drift(fmt.Sprintf("probe-%d", i))
		driftErr := bob.Create(ctx, record)
		if apierrors.IsForbidden(hotfixErr) && apierrors.IsForbidden(driftErr) {
			return
		}
		// A probe that got in before the policy did is not left behind.
		if hotfixErr == nil {
			_ = env.Client.Delete(ctx, probe)
		}
		if driftErr == nil {
			_ = env.Client.Delete(ctx, record)
		}
		if time.Now().After(deadline) {
			t.Fatalf("policies not enforced after 60s: hotfix %v, drift %v", hotfixErr, driftErr)
		}
		time.Sleep(200 * time.Millisecond) // polling the apiserver's own state; nothing to watch
	}
}

func TestManualHotfixAnnotation(t *testing.T) {
	waitForPolicy(t)
	ctx := context.Background()
	key := refluxv1.DefaultManualHotfixKey
	cases := []struct {
		name    string
		managed bool
		initial map[string]string // annotations the object starts with; nil: who creates it
		who     *ctrlclient.Client
		set     map[string]string // annotations after the write; a missing key is removed
		denied  bool
	}{
		{name: "outside the groups, adding it", managed: true, initial: map[string]string{}, who: &bob, set: map[string]string{key: "manual"}, denied: true},
		{name: "outside the groups, changing its value", managed: true, initial: map[string]string{key: "manual"}, who: &bob, set: map[string]string{key: "other"}, denied: true},
		{name: "outside the groups, creating an object with it", managed: true, who: &bob, set: map[string]string{key: "manual"}, denied: true},
		{name: "in a break-glass group, adding it", managed: true, initial: map[string]string{}, who: &alice, set: map[string]string{key: "manual"}},
		{name: "in a break-glass group, creating an object with it", managed: true, who: &alice, set: map[string]string{key: "manual"}},
		{name: "outside the groups, other annotations of a hotfixed object", managed: true, initial: map[string]string{key: "manual"}, who: &bob, set: map[string]string{key: "manual", "note": "ticket-42"}},
		{name: "outside the groups, removing it", managed: true, initial: map[string]string{key: "manual"}, who: &bob, set: map[string]string{}},
		{name: "outside the groups, on an object Flux does not manage", managed: false, initial: map[string]string{}, who: &bob, set: map[string]string{key: "manual"}},
		{name: "kustomize-controller applying it from Git", managed: true, initial: map[string]string{}, who: &kustomizeController, set: map[string]string{key: "manual"}},
		{name: "reflux marking an audit-derived hotfix", managed: true, initial: map[string]string{}, who: &reflux, set: map[string]string{key: "manual"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("hotfix-%d", i)
			var err error
			if tc.initial == nil {
				err = (*tc.who).Create(ctx, configMap(name, tc.managed, tc.set))
			} else {
				// The admin is outside the break-glass groups as well: an
				// object that starts hotfixed is seeded by alice.
				seeder := env.Client
				if tc.initial[key] != "" {
					seeder = alice
				}
				cm := configMap(name, tc.managed, tc.initial)
				if err := seeder.Create(ctx, cm); err != nil {
					t.Fatal(err)
				}
				var got corev1.ConfigMap
				if err := (*tc.who).Get(ctx, ctrlclient.ObjectKeyFromObject(cm), &got); err != nil {
					t.Fatal(err)
				}
				got.Annotations = tc.set
				err = (*tc.who).Update(ctx, &got)
			}
			if !tc.denied {
				if err != nil {
					t.Fatalf("allowed write denied: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want a denial", err)
			}
			for _, want := range []string{key, breakGlassGroup, "reflux-manual-hotfix"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("denial %q does not name %q", err, want)
				}
			}
		})
	}
}

func drift(name string) *refluxv1.Drift {
	now := metav1.Now()
	return &refluxv1.Drift{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
		Spec: refluxv1.DriftSpec{
			Kustomization: refluxv1.KustomizationRef{Namespace: "flux-system", Name: "apps"},
			Policy:        "default",
			Object:        refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "flags"},
			Fields:        []refluxv1.DriftField{{Pointer: "/data/NEW_FLAG", ChangeType: refluxv1.ChangeAdd, Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow}},
			FirstSeen:     now, LastSeen: now,
		},
	}
}

func TestDriftRecords(t *testing.T) {
	waitForPolicy(t)
	ctx := context.Background()

	// A record made by hand is refused, naming who may write records.
	err := bob.Create(ctx, drift("forged"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refluxSA) || !strings.Contains(err.Error(), "reflux.dev/dismiss") {
		t.Fatalf("hand-made record: got %v, want a denial naming reflux's ServiceAccount and the dismiss annotation", err)
	}

	// reflux creates a record and writes its status.
	rec := drift("real")
	if err := reflux.Create(ctx, rec); err != nil {
		t.Fatalf("reflux creating a record: %v", err)
	}
	rec.Status.State = refluxv1.DriftHeld
	if err := reflux.Status().Update(ctx, rec); err != nil {
		t.Fatalf("reflux writing status: %v", err)
	}

	get := func(c ctrlclient.Client) *refluxv1.Drift {
		t.Helper()
		var d refluxv1.Drift
		if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(rec), &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}

	// A user may not change what the record says happened…
	d := get(bob)
	d.Spec.Fields[0].Pointer = "/data/OTHER"
	if err := bob.Update(ctx, d); !apierrors.IsForbidden(err) {
		t.Fatalf("user changing spec: got %v, want a denial", err)
	}
	d = get(bob)
	d.Status.State = refluxv1.DriftResolved
	if err := bob.Status().Update(ctx, d); !apierrors.IsForbidden(err) {
		t.Fatalf("user changing status: got %v, want a denial", err)
	}

	// …but may dismiss it, and delete it.
	d = get(bob)
	d.Annotations = map[string]string{refluxv1.DismissAnnotation: "not ours"}
	if err := bob.Update(ctx, d); err != nil {
		t.Fatalf("user dismissing: %v", err)
	}
	if got := get(env.Client); got.Annotations[refluxv1.DismissAnnotation] != "not ours" || got.Status.State != refluxv1.DriftHeld {
		t.Fatalf("after dismissing: annotations %v, state %q", got.Annotations, got.Status.State)
	}
	if err := bob.Delete(ctx, get(bob)); err != nil {
		t.Fatalf("user deleting: %v", err)
	}
}
