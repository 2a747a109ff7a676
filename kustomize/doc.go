// Package kustomize renders a directory of a source tree exactly the way
// Flux's kustomize-controller does for a kustomize.toolkit.fluxcd.io/v1
// Kustomization: generate kustomization.yaml when missing, apply the
// Kustomization spec (targetNamespace, namePrefix/nameSuffix, patches,
// images, components), build with krusty, run post-build substitution and
// finally set spec.commonMetadata.
//
// The package is a pure library over files and Flux API types. It knows no
// cluster: values that kustomize-controller would read from ConfigMaps and
// Secrets (postBuild.substituteFrom) are passed in already resolved.
//
// Sub-packages: origin maps every rendered field back to the file, line and
// column that declared it; edit changes source files minimally.
package kustomize
