package drift

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WithClient returns a Detector with d's options that makes its dry runs
// through c: a client impersonating the Kustomization's ServiceAccount, so
// the dry run is the apply kustomize-controller makes as that account
// (reverse/tenancy). It costs no request.
func (d *Detector) WithClient(c client.Client) (*Detector, error) {
	if c == nil {
		return nil, errors.New("drift: client must not be nil")
	}
	return &Detector{client: c, opts: d.opts}, nil
}
