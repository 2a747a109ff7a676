package release

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj parses one manifest.
func obj(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.TrimSpace(manifest)), &u.Object); err != nil {
		t.Fatalf("parsing manifest: %v", err)
	}
	return u
}

// owned returns a managedFields entry of manager owning fields (FieldsV1
// JSON), written at second sec of a fixed minute.
func owned(manager string, op metav1.ManagedFieldsOperationType, sec int, fields string) metav1.ManagedFieldsEntry {
	at := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, sec, 0, time.UTC))
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: op, APIVersion: "v1", Time: &at,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

// withManaged returns a copy of u with managedFields entries.
func withManaged(u *unstructured.Unstructured, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	out := u.DeepCopy()
	out.SetManagedFields(entries)
	return out
}
