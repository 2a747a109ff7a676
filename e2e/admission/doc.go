// Package admission tests the ValidatingAdmissionPolicies shipped in
// config/admission against the real kube-apiserver: applied with the real
// kubectl, as a platform team would, then exercised by users in and out of
// the break-glass groups and by real ServiceAccount tokens for
// kustomize-controller and reflux.
package admission
