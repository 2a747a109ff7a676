package release

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errGetOnly is what secretSource answers to anything but a Get.
var errGetOnly = errors.New("release: Helm storage is only read here, one release at a time")

// secretSource is the typed Secrets client Helm's Secrets driver wants,
// over a SecretGetter in one namespace. Reading a release takes one Get;
// writes are refused, so nothing here can change Helm's storage. It
// remembers whether a Secret was read, to tell a missing release from one
// the driver cannot decode. It serves one Load call.
type secretSource struct {
	// ctx is the Load call's: the driver passes context.Background().
	ctx       context.Context
	get       SecretGetter
	namespace string
	fetched   bool
}

var _ typedcorev1.SecretInterface = &secretSource{}

func (s *secretSource) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := s.get.Get(s.ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, secret); err != nil {
		return nil, err
	}
	s.fetched = true
	return secret, nil
}

func (s *secretSource) List(context.Context, metav1.ListOptions) (*corev1.SecretList, error) {
	return nil, errGetOnly
}

func (s *secretSource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errGetOnly
}

func (s *secretSource) Create(context.Context, *corev1.Secret, metav1.CreateOptions) (*corev1.Secret, error) {
	return nil, errGetOnly
}

func (s *secretSource) Update(context.Context, *corev1.Secret, metav1.UpdateOptions) (*corev1.Secret, error) {
	return nil, errGetOnly
}

func (s *secretSource) Delete(context.Context, string, metav1.DeleteOptions) error {
	return errGetOnly
}

func (s *secretSource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return errGetOnly
}

func (s *secretSource) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Secret, error) {
	return nil, errGetOnly
}

func (s *secretSource) Apply(context.Context, *applycorev1.SecretApplyConfiguration, metav1.ApplyOptions) (*corev1.Secret, error) {
	return nil, errGetOnly
}
