package drift

import (
	"bytes"
	"context"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
)

// The write-back fixture: its own namespace, repository and policy, which
// signs with an OpenPGP key and writes branches.
const (
	wbNS   = "payments"
	wbRepo = "payments.git"
)

var (
	wbKs        *kustomizev1.Kustomization
	wbPublicKey []byte
)

func setupWriteBack(ctx context.Context) error {
	if _, err := env.Git.PushDir(ctx, wbRepo, "testdata/wb"); err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, wbNS); err != nil {
		return err
	}
	src, err := env.CreateGitRepository(ctx, testenv.GitRepositoryOptions{Name: "payments", Namespace: wbNS, Repo: wbRepo,
		Interval: 2 * time.Second})
	if err != nil {
		return err
	}
	wbKs, err = env.CreateKustomization(ctx, testenv.KustomizationOptions{
		Name: "payments", Namespace: wbNS, Source: src.Name, Path: "./base", TargetNamespace: wbNS, Prune: true,
		// A short interval drives reflux's resync, which checks its branches.
		Interval: 3 * time.Second,
		Customize: func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{"reflux.dev/tier": "payments"}
			k.Annotations = map[string]string{refluxv1.ReverseSyncAnnotation: refluxv1.ReverseSyncEnabled}
		},
	})
	if err != nil {
		return err
	}
	if err := env.WaitForReady(ctx, wbKs); err != nil {
		return err
	}
	private, public, err := signingKey()
	if err != nil {
		return err
	}
	wbPublicKey = public
	secret := &corev1.Secret{Data: map[string][]byte{"git.asc": private}}
	secret.Name, secret.Namespace = "reflux-signing-key", wbNS
	if err := env.Client.Create(ctx, secret); err != nil {
		return err
	}
	p := &refluxv1.ReverseSyncPolicy{}
	p.Name, p.Namespace = "payments", wbNS
	p.Spec.KustomizationSelector.MatchLabels = map[string]string{"reflux.dev/tier": "payments"}
	p.Spec.Git.Author = refluxv1.CommitAuthor{Name: "reflux", Email: "reflux@example.com"}
	p.Spec.Git.SigningKey = &refluxv1.SigningKey{Type: refluxv1.OpenPGPSigningKey}
	p.Spec.Git.SigningKey.SecretRef.Name = secret.Name
	return env.Client.Create(ctx, p)
}

// signingKey makes an OpenPGP key pair, armored as Flux's
// image-automation-controller expects the private part.
func signingKey() ([]byte, []byte, error) {
	e, err := openpgp.NewEntity("reflux", "e2e", "reflux@example.com", nil)
	if err != nil {
		return nil, nil, err
	}
	var priv, pub bytes.Buffer
	w, err := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		return nil, nil, err
	}
	w.Close()
	w, err = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, nil, err
	}
	w.Close()
	return priv.Bytes(), pub.Bytes(), nil
}
