// Package helmlive runs reflux against the real helm-controller (issue 19
// §2–§4): a HelmRelease applied by an opted-in Kustomization is governed
// by the Kustomization's policy, and a live edit of an object its chart
// rendered is held with helm-controller's own key and recorded, naming
// the HelmRelease and the release. The chart is e2e/helmflux's, served
// from the app's own repository.
package helmlive
