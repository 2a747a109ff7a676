package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	runtimeclient "github.com/fluxcd/pkg/runtime/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeconfigKeys are the keys kustomize-controller reads a kubeconfig
// from when spec.kubeConfig.secretRef names none, in its order.
var kubeconfigKeys = []string{"value", "value.yaml"}

// kubeconfigOf picks the kubeconfig out of a Secret's data as
// kustomize-controller does: the named key, else value, else value.yaml.
func kubeconfigOf(ref Ref, data map[string][]byte) ([]byte, error) {
	if ref.Key != "" {
		if b := data[ref.Key]; b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("kubeconfig Secret %s has no key %q", ref.SecretKey(), ref.Key)
	}
	for _, k := range kubeconfigKeys {
		if b := data[k]; b != nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("kubeconfig Secret %s has neither a 'value' nor a 'value.yaml' key", ref.SecretKey())
}

// AuditTokenKey is the kubeconfig Secret's key holding the bearer token
// the cluster's apiserver sends to reflux's audit webhook (--audit-addr),
// so that its writes are attributed to the users who made them. Flux
// reads only the kubeconfig's key, so the token can sit beside it.
const AuditTokenKey = "audit-token"

// kubeconfig is a cluster's kubeconfig as read, and the token its audit
// events come with, with their fingerprint: a new fingerprint is a
// rotated Secret.
type kubeconfig struct {
	data        []byte
	auditToken  string
	fingerprint string
}

// load reads ref's kubeconfig from the hub.
func load(ctx context.Context, reader client.Reader, ref Ref) (kubeconfig, error) {
	s := &corev1.Secret{}
	if err := reader.Get(ctx, ref.SecretKey(), s); err != nil {
		return kubeconfig{}, fmt.Errorf("reading kubeconfig Secret %s: %w", ref.SecretKey(), err)
	}
	b, err := kubeconfigOf(ref, s.Data)
	if err != nil {
		return kubeconfig{}, err
	}
	token := strings.TrimSpace(string(s.Data[AuditTokenKey]))
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(token))
	return kubeconfig{data: b, auditToken: token, fingerprint: hex.EncodeToString(h.Sum(nil))}, nil
}

// restConfig turns a kubeconfig into a connection with Flux's own rules:
// inline credentials only, and exec providers and disabled TLS
// verification refused unless opts allow them (kustomize-controller's
// --insecure-kubeconfig-exec and --insecure-kubeconfig-tls).
func restConfig(ctx context.Context, ref Ref, kc kubeconfig, opts runtimeclient.KubeConfigOptions) (*rest.Config, error) {
	cfg, err := runtimeclient.KubeConfigFromBytes(kc.data)
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig in Secret %s: %w", ref.SecretKey(), err)
	}
	return runtimeclient.KubeConfig(ctx, cfg, opts), nil
}
