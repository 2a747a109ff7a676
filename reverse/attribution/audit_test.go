package attribution

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/internal/audit"
	"github.com/reflux-dev/reflux/reverse/governor"
)

func TestIsKustomizeController(t *testing.T) {
	tests := []struct {
		name string
		w    audit.Write
		want bool
	}{
		{"Flux's ServiceAccount", audit.Write{User: "system:serviceaccount:flux-system:kustomize-controller"}, true},
		{"Flux installed elsewhere", audit.Write{User: "system:serviceaccount:gitops:kustomize-controller"}, true},
		{"impersonating a tenant", audit.Write{User: "system:serviceaccount:team-a:deployer",
			Impersonator: "system:serviceaccount:flux-system:kustomize-controller"}, true},
		{"a tenant posing as Flux's client", audit.Write{User: "system:serviceaccount:team-a:deployer",
			UserAgent: "kustomize-controller/v1.9.6 (linux/amd64) kubernetes/$Format"}, false},
		{"a person impersonating a tenant", audit.Write{User: "system:serviceaccount:team-a:deployer",
			Impersonator: "alice@example.com"}, false},
		{"a person", audit.Write{User: "alice@example.com", UserAgent: "kubectl/v1.36.4 (linux/amd64) kubernetes/abc"}, false},
		{"a user named like the controller", audit.Write{User: "kustomize-controller"}, false},
		{"another ServiceAccount", audit.Write{User: "system:serviceaccount:flux-system:helm-controller"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isKustomizeController(tt.w); got != tt.want {
				t.Errorf("isKustomizeController(%+v) = %v, want %v", tt.w, got, tt.want)
			}
		})
	}
}

// TestIsHelmController: helm-controller's own deletions of a chart's
// objects (an upgrade, a rollback, an uninstall) are told by identity,
// as the kustomize-controller's are, impersonating a HelmRelease's
// ServiceAccount included.
func TestIsHelmController(t *testing.T) {
	tests := []struct {
		name string
		w    audit.Write
		want bool
	}{
		{"Flux's ServiceAccount", audit.Write{User: "system:serviceaccount:flux-system:helm-controller"}, true},
		{"impersonating a tenant", audit.Write{User: "system:serviceaccount:team-a:deployer",
			Impersonator: "system:serviceaccount:flux-system:helm-controller"}, true},
		{"a tenant posing as Flux's client", audit.Write{User: "system:serviceaccount:team-a:deployer",
			UserAgent: "helm-controller/v1.6.2"}, false},
		{"kustomize-controller", audit.Write{User: "system:serviceaccount:flux-system:kustomize-controller"}, false},
		{"a person", audit.Write{User: "alice@example.com"}, false},
		{"a user named like the controller", audit.Write{User: "helm-controller"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isHelmController(tt.w); got != tt.want {
				t.Errorf("isHelmController(%+v) = %v, want %v", tt.w, got, tt.want)
			}
		})
	}
}

func TestAuditedWrite(t *testing.T) {
	key := audit.ObjectKey{Resource: "secrets", Namespace: "payments", Name: "payments-api"}
	tests := []struct {
		name        string
		w           audit.Write
		manager     string
		fromFluxSet bool
	}{
		{"kubectl sends its field manager", audit.Write{User: "alice@example.com", FieldManager: "kubectl-patch",
			UserAgent: "kubectl/v1.36.4 (linux/amd64) kubernetes/abc"}, "kubectl-patch", false},
		{"a client without one is named as the apiserver names it", audit.Write{User: "bob@example.com",
			UserAgent: "rotate-keys/v2 (linux/amd64)"}, "rotate-keys", false},
		{"Flux's apply", audit.Write{User: "system:serviceaccount:flux-system:kustomize-controller",
			FieldManager: "kustomize-controller"}, "kustomize-controller", true},
		{"no user agent either", audit.Write{User: "carol@example.com"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.Verb, tt.w.Groups = "patch", []string{"oncall"}
			got := auditedWrite(key, tt.w)
			if got.Manager != tt.manager || got.Flux != tt.fromFluxSet {
				t.Errorf("auditedWrite(%+v) = manager %q, Flux %v; want %q, %v", tt.w, got.Manager, got.Flux, tt.manager, tt.fromFluxSet)
			}
			if got.Namespace != "payments" || got.Name != "payments-api" || got.User != tt.w.User || got.Verb != "patch" ||
				len(got.Groups) != 1 || got.Groups[0] != "oncall" {
				t.Errorf("auditedWrite lost the write's identity: %+v", got)
			}
		})
	}
}

// TestWriterNamesWhoRemovedAField: the latest update by someone whose
// writes can be drift, past reflux's own hold and Flux's apply.
func TestWriterNamesWhoRemovedAField(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	store := audit.NewStore(audit.WithClock(func() time.Time { return t0 }))
	key := audit.ObjectKey{Resource: "configmaps", Namespace: "shop", Name: "flags"}
	store.Record(key, audit.Write{User: "system:serviceaccount:flux-system:kustomize-controller", FieldManager: "kustomize-controller",
		Verb: "patch", Time: t0})
	store.Record(key, audit.Write{User: "bob@example.com", FieldManager: "kubectl-patch", Verb: "patch", Time: t0.Add(time.Second)})
	store.Record(key, audit.Write{User: "system:serviceaccount:reflux-system:reflux-controller", FieldManager: "reflux",
		Verb: "patch", Time: t0.Add(2 * time.Second)})
	a := Audit{Store: store, Mapper: mapper}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("shop")
	obj.SetName("flags")
	benign := func(m string) bool { return m == "reflux" || m == "kustomize-controller" }

	w, ok := a.Writer(obj, t0.Add(3*time.Second), benign)
	if !ok || w.User != "bob@example.com" || w.Manager != "kubectl-patch" {
		t.Fatalf("Writer = %+v, %v; want bob's kubectl-patch", w, ok)
	}
	if _, ok := a.Writer(obj, t0.Add(-2*time.Second), benign); ok {
		t.Error("Writer found a write before any was made")
	}
	if _, ok := a.Writer(obj, t0.Add(3*time.Second), func(string) bool { return true }); ok {
		t.Error("Writer named a writer that is never drift")
	}
}

// TestSecretWritesReachTheEngine: only writes of core Secrets are passed
// on, in the engine's terms.
func TestSecretWritesReachTheEngine(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	store := audit.NewStore(audit.WithClock(func() time.Time { return t0 }))
	var got []governor.AuditedWrite
	SecretWrites(store, func(w governor.AuditedWrite) { got = append(got, w) })
	write := audit.Write{User: "alice@example.com", FieldManager: "kubectl-edit", Verb: "update", Time: t0}
	store.Record(audit.ObjectKey{Resource: "configmaps", Namespace: "shop", Name: "flags"}, write)
	store.Record(audit.ObjectKey{APIGroup: "example.com", Resource: "secrets", Namespace: "shop", Name: "lookalike"}, write)
	store.Record(audit.ObjectKey{Resource: "secrets", Namespace: "shop", Name: "db"}, write)
	if len(got) != 1 || got[0].Name != "db" || got[0].Namespace != "shop" || got[0].Manager != "kubectl-edit" || got[0].User != "alice@example.com" {
		t.Fatalf("SecretWrites passed %+v, want the one write of Secret shop/db", got)
	}
}
