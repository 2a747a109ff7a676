package manager

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestLoadRecordKey(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "record-key"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	id := types.NamespacedName{Namespace: ns.Name, Name: "reflux-record-key"}

	// First start: the Secret is created with a fresh key.
	first, err := LoadRecordKey(ctx, k8sClient, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 32 {
		t.Fatalf("created a %d-byte key", len(first))
	}
	secret := &corev1.Secret{}
	if err := k8sClient.Get(ctx, id, secret); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data[RecordKeyField], first) {
		t.Fatal("the Secret does not hold the key returned")
	}

	// A restart, or a second replica, reads the same key.
	again, err := LoadRecordKey(ctx, k8sClient, id)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("second load: %v, same key %v", err, bytes.Equal(again, first))
	}

	// A key too short to trust is refused, naming the fix.
	secret.Data[RecordKeyField] = []byte("short")
	if err := k8sClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRecordKey(ctx, k8sClient, id); err == nil || !strings.Contains(err.Error(), "delete the Secret") {
		t.Fatalf("short key: got %v, want a refusal naming the fix", err)
	}

	// No namespace to create it in: the error says what to set.
	_, err = LoadRecordKey(ctx, k8sClient, types.NamespacedName{Namespace: "no-such-namespace", Name: "k"})
	if err == nil || !strings.Contains(err.Error(), "RUNTIME_NAMESPACE") {
		t.Fatalf("missing namespace: got %v, want an error naming RUNTIME_NAMESPACE", err)
	}
}
