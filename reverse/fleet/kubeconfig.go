package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/auth"
	authutils "github.com/fluxcd/pkg/auth/utils"
	"github.com/fluxcd/pkg/cache"
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
// rotated Secret, or a changed workload identity ConfigMap.
type kubeconfig struct {
	data []byte
	// workloadIdentity is a ConfigMap's: its provider makes the
	// credentials (restConfig), and data is empty.
	workloadIdentity bool
	auditToken       string
	fingerprint      string
}

// load reads ref's kubeconfig from the hub.
func load(ctx context.Context, reader client.Reader, ref Ref) (kubeconfig, error) {
	if ref.ConfigMap != "" {
		return loadIdentity(ctx, reader, ref)
	}
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

// loadIdentity reads a workload identity ConfigMap. Its fingerprint is
// its data: a changed provider, address, CA, audience or ServiceAccount
// reconnects, as a rotated Secret does. It holds no audit token: a
// ConfigMap is no place for one, so the cluster's writes are attributed
// to no user.
func loadIdentity(ctx context.Context, reader client.Reader, ref Ref) (kubeconfig, error) {
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, ref.ConfigMapKey(), cm); err != nil {
		return kubeconfig{}, fmt.Errorf("reading workload identity ConfigMap %s: %w", ref.ConfigMapKey(), err)
	}
	h := sha256.New()
	h.Write([]byte("configmap\x00"))
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(cm.Data[k]))
		h.Write([]byte{0})
	}
	return kubeconfig{workloadIdentity: true, fingerprint: hex.EncodeToString(h.Sum(nil))}, nil
}

// WorkloadIdentity is what connecting through a workload identity
// ConfigMap (spec.kubeConfig.configMapRef) takes, as kustomize-controller
// does it, through Flux's own fluxcd/pkg/auth: a client of the hub, which
// reads the ConfigMap and the ServiceAccount and creates the
// ServiceAccount's tokens, and a cache for those tokens.
type WorkloadIdentity struct {
	Client client.Client
	// Cache, when set, keeps tokens until shortly before they expire;
	// without it every request to the cluster gets a new one.
	Cache *cache.TokenCache
}

// restConfig turns a kubeconfig into a connection with Flux's own rules:
// inline credentials only, and exec providers and disabled TLS
// verification refused unless opts allow them (kustomize-controller's
// --insecure-kubeconfig-exec and --insecure-kubeconfig-tls). A workload
// identity's connection asks its provider for credentials at each
// request, which the provider's cache answers while they last.
func restConfig(ctx context.Context, ref Ref, kc kubeconfig, opts runtimeclient.KubeConfigOptions, wi WorkloadIdentity) (*rest.Config, error) {
	if kc.workloadIdentity {
		if wi.Client == nil {
			return nil, fmt.Errorf("workload identity ConfigMap %s: reflux runs without a client for workload identity", ref.ConfigMapKey())
		}
		var aopts []auth.Option
		if wi.Cache != nil {
			aopts = append(aopts, auth.WithCache(*wi.Cache, cache.InvolvedObject{Kind: "ConfigMap", Name: ref.ConfigMap,
				Namespace: ref.Namespace, Operation: "reflux_fetch_kubeconfig"}))
		}
		cfg, err := authutils.GetRESTConfig(ctx, meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: ref.ConfigMap}},
			ref.Namespace, wi.Client, aopts...)
		if err != nil {
			return nil, fmt.Errorf("workload identity ConfigMap %s: %w", ref.ConfigMapKey(), err)
		}
		return runtimeclient.KubeConfig(ctx, cfg, opts), nil
	}
	cfg, err := runtimeclient.KubeConfigFromBytes(kc.data)
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig in Secret %s: %w", ref.SecretKey(), err)
	}
	return runtimeclient.KubeConfig(ctx, cfg, opts), nil
}
