package branches

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/edit"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/writeback/sops"
)

// splitSecrets separates Secret fields, which are written SOPS-encrypted,
// from the rest.
func splitSecrets(fields []fieldRef) (plain []fieldRef, secrets map[string][]fieldRef) {
	secrets = map[string][]fieldRef{}
	for _, f := range fields {
		if isSecret(f.record) {
			o := f.record.Spec.Object
			key := o.Namespace + "/" + o.Name
			secrets[key] = append(secrets[key], f)
			continue
		}
		plain = append(plain, f)
	}
	return plain, secrets
}

// applySecrets rewrites each drifted Secret's source document as a
// SOPS-encrypted Secret holding the live values. Plaintext never touches
// the worktree: the values come from the held live Secret and go straight
// into the encryption. A Secret reflux cannot write safely is refused.
func (e *editor) applySecrets(ctx context.Context, dir string, opts kustomize.BuildOptions,
	secrets map[string][]fieldRef, changed map[string]bool) error {
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		fields := secrets[key]
		file, err := e.writeSecret(ctx, dir, opts, key, fields)
		if err != nil {
			for _, f := range fields {
				e.refused = append(e.refused, refusal{fieldRef: f, reason: err.Error()})
			}
			continue
		}
		if file != "" {
			changed[file] = true
		}
	}
	return nil
}

func (e *editor) writeSecret(ctx context.Context, dir string, opts kustomize.BuildOptions, key string, fields []fieldRef) (string, error) {
	ks := e.set.Spec
	if ks == nil || ks.Spec.Decryption == nil || ks.Spec.Decryption.Provider != "sops" {
		return "", fmt.Errorf("the Kustomization has no SOPS decryption (spec.decryption.provider: sops), so Flux could not apply an encrypted Secret")
	}
	live, ok := e.set.LiveSecrets[key]
	if !ok {
		return "", fmt.Errorf("the held live Secret %s is not available to read the values from", key)
	}
	idx, before, err := origin.Build(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("rendering the source tree: %w", err)
	}
	o := fields[0].record.Spec.Object
	ref, err := idx.Resolve(origin.ObjectRef{Kind: "Secret", Namespace: o.Namespace, Name: o.Name})
	if err != nil {
		return "", err
	}
	file, err := secretDocument(idx, ref)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.FromSlash(file))
	src, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	secret, err := withLiveValues(src, fields, live)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if secret == nil {
		return "", nil // Git already holds these values
	}
	enc, err := sops.EncryptSecret(secret, e.recipients)
	if err != nil {
		return "", fmt.Errorf("encrypting %s: %w", file, err)
	}
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", file, err)
	}
	return file, verifySecret(ctx, opts, before, ref)
}

// secretDocument returns the file that declares the Secret, refusing what
// cannot be rewritten whole: generated Secrets and files with other
// documents beside it.
func secretDocument(idx *origin.Index, ref origin.ObjectRef) (string, error) {
	o, err := idx.Lookup(ref, "/metadata/name")
	if err != nil {
		return "", fmt.Errorf("locating the Secret's source: %w", err)
	}
	if o.Kind != origin.KindResource {
		return "", fmt.Errorf("the Secret is declared by %s, not a plain resource document; only those are rewritten encrypted", o.Kind)
	}
	return o.File, nil
}

// withLiveValues parses the single Secret document in src and sets the
// drifted keys to the live values. It returns nil when nothing changes.
func withLiveValues(src []byte, fields []fieldRef, live map[string][]byte) (*corev1.Secret, error) {
	if docs := bytes.Count(append([]byte("\n"), src...), []byte("\n---")); docs > 1 ||
		(docs == 1 && !bytes.HasPrefix(bytes.TrimSpace(src), []byte("---"))) {
		return nil, fmt.Errorf("the file holds other documents beside the Secret; split it to let reflux rewrite the Secret encrypted")
	}
	if bytes.Contains(src, []byte("\nsops:")) {
		return nil, fmt.Errorf("the Secret is already SOPS-encrypted; reflux cannot add values without the private key")
	}
	secret := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(src, secret); err != nil {
		return nil, fmt.Errorf("parsing the Secret: %w", err)
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	// stringData folds into data: one place for every value.
	for k, v := range secret.StringData {
		secret.Data[k] = []byte(v)
	}
	secret.StringData = nil
	changed := false
	for _, f := range fields {
		k, ok := secretKey(f.field.Pointer)
		if !ok {
			return nil, fmt.Errorf("%s is not a Secret data key", f.field.Pointer)
		}
		v, ok := live[k]
		if !ok {
			return nil, fmt.Errorf("the live Secret has no key %q", k)
		}
		if !bytes.Equal(secret.Data[k], v) {
			secret.Data[k] = v
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return secret, nil
}

func secretKey(ptr string) (string, bool) {
	for _, prefix := range []string{"/data/", "/stringData/"} {
		if k, ok := strings.CutPrefix(ptr, prefix); ok && !strings.Contains(k, "/") {
			return jsonptr.Unescape(k), true
		}
	}
	return "", false
}

// verifySecret re-renders the tree: it must still build, and nothing but
// the rewritten Secret may have moved. The Secret's values are encrypted,
// so only its presence and key set are checked.
func verifySecret(ctx context.Context, opts kustomize.BuildOptions, before *kustomize.Result, ref origin.ObjectRef) error {
	after, err := kustomize.Build(ctx, opts)
	if err != nil {
		return fmt.Errorf("re-rendering after encrypting the Secret: %w", err)
	}
	others := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, o := range objs {
			if origin.RefOf(o) != ref {
				out = append(out, o)
			}
		}
		return out
	}
	if moved := edit.Diff(others(before.Objects), others(after.Objects)); len(moved) > 0 {
		return &edit.VerifyError{Moved: moved}
	}
	for _, o := range after.Objects {
		if origin.RefOf(o) == ref {
			return nil
		}
	}
	return fmt.Errorf("the rewritten Secret %s is missing from the render", ref)
}
