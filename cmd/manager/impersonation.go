package manager

import (
	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/release"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// impersonation gives the engine a Detector and a Holder per tenant
// identity, over one cached impersonating client each (reverse/tenancy).
// The detector keeps reflux's own options (allowed and override managers):
// only the identity of its dry run changes.
type impersonation struct {
	clients  *tenancy.Clients
	detector *drift.Detector
}

var _ governor.Impersonation = impersonation{}

// Detector returns a Detector whose dry runs impersonate user.
func (i impersonation) Detector(user string) (governor.Detector, error) {
	c, err := i.clients.For(user)
	if err != nil {
		return nil, err
	}
	return i.detector.WithClient(c)
}

// ReleaseDetector returns a Helm release's Detector whose dry runs
// impersonate user, a HelmRelease's ServiceAccount.
func (i impersonation) ReleaseDetector(user string) (*release.Detector, error) {
	c, err := i.clients.For(user)
	if err != nil {
		return nil, err
	}
	return release.New(c)
}

// Holder returns a Holder whose holds and releases impersonate user.
func (i impersonation) Holder(user string) (governor.Holder, error) {
	c, err := i.clients.For(user)
	if err != nil {
		return nil, err
	}
	return controllers.Holder{Client: c}, nil
}
