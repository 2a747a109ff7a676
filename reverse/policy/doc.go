// Package policy says what a ReverseSyncPolicy governs, and checks it for
// what admission (schema and CEL) cannot: glob syntax, the commit message
// template, the signing key material, clashes between the branch prefix
// and real source branches, and whether the pull-request token reaches the
// forge (ForgeChecks, which spare a rate-limited forge API the checks that
// passed recently).
//
// Which Kustomizations a policy governs (Governed, Governing) is decided
// here, once, because both reconcilers and their watches ask it, and the
// rule is the policy's: a Kustomization must opt in with its annotation and
// be selected; either alone never makes reflux act. CheckCluster says
// which of those reflux can govern at all: not one Flux applies to a
// remote cluster through a spec.kubeConfig that names neither a Secret
// nor a ConfigMap (issue 24), which gets a named reason rather than a
// guess.
package policy
