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
