package governor

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReplayable: a new leader decides again the deletion of a rendered
// object that is gone, or that Flux recreated at or after it (in the
// same second counts: creationTimestamp keeps the second only); not one
// whose live copy is older than the deletion the audit log names.
func TestReplayable(t *testing.T) {
	deleted := time.Date(2026, 12, 7, 1, 0, 0, 500_000_000, time.UTC)
	created := func(at time.Time) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetCreationTimestamp(metav1.NewTime(at))
		return u
	}
	for _, tc := range []struct {
		name   string
		live   *unstructured.Unstructured
		exists bool
		want   bool
	}{
		{name: "gone", want: true},
		{name: "recreated after", live: created(deleted.Add(20 * time.Second)), exists: true, want: true},
		{name: "recreated in the same second", live: created(deleted.Truncate(time.Second)), exists: true, want: true},
		{name: "live from before the deletion", live: created(deleted.Add(-time.Hour)), exists: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := replayable(deleted, tc.live, tc.exists); got != tc.want {
				t.Fatalf("replayable = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInventoryObject: an entry of a Kustomization's inventory names the
// object the audit log's deletions are looked up by.
func TestInventoryObject(t *testing.T) {
	obj, err := inventoryObject("apps_web_apps_Deployment", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if gvk := obj.GroupVersionKind(); gvk.Group != "apps" || gvk.Version != "v1" || gvk.Kind != "Deployment" ||
		obj.GetNamespace() != "apps" || obj.GetName() != "web" {
		t.Fatalf("inventoryObject = %s %s/%s", gvk, obj.GetNamespace(), obj.GetName())
	}
	core, err := inventoryObject("apps_flags__ConfigMap", "v1")
	if err != nil || core.GroupVersionKind().Group != "" || core.GetKind() != "ConfigMap" {
		t.Fatalf("inventoryObject of a core kind = %v, %v", core, err)
	}
	if _, err := inventoryObject("not-an-id", "v1"); err == nil {
		t.Fatal("a malformed entry parsed")
	}
}
