package manager

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/reverse/record"
)

// RecordKeyField is the key of the record key Secret's data.
const RecordKeyField = "key"

// LoadRecordKey reads the key that seals Drift records from the Secret
// at id, creating the Secret with a random key when it does not exist.
// Replicas race to create it at first start; the loser reads the winner's
// key. The Secret must stay readable by reflux alone: whoever reads it can
// seal a record reflux would act on.
func LoadRecordKey(ctx context.Context, c client.Client, id types.NamespacedName) ([]byte, error) {
	for attempt := 0; attempt < 2; attempt++ {
		secret := &corev1.Secret{}
		err := c.Get(ctx, id, secret)
		if err == nil {
			key := secret.Data[RecordKeyField]
			if len(key) < record.MinSealKey {
				return nil, fmt.Errorf("record key Secret %s: data.%s has %d bytes, want at least %d (delete the Secret to have reflux create a new one)",
					id, RecordKeyField, len(key), record.MinSealKey)
			}
			return key, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading record key Secret %s: %w", id, err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generating a record key: %w", err)
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "reflux", "app.kubernetes.io/component": "record-key"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{RecordKeyField: key},
		}
		err = c.Create(ctx, secret)
		if err == nil {
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating record key Secret %s (set RUNTIME_NAMESPACE to reflux's own namespace): %w", id, err)
		}
	}
	return nil, fmt.Errorf("record key Secret %s: created and deleted while starting", id)
}
