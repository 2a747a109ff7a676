// Package faithful proves reflux's central claim: for every tree in the
// kustomize corpus (kustomize/testdata), the objects kustomize.Build renders
// are the objects the real kustomize-controller v1.9.6 applies.
//
// Each corpus case is a tree with one of its flux-kustomization*.yaml specs,
// or the bare tree (empty spec) when it has a golden.txt without a plain
// flux-kustomization.yaml, exactly as kustomize/origin's golden tests define
// the corpus. TestMain starts one internal/testenv environment, pushes each
// tree to its own git repository and gives each case its own namespace with a
// GitRepository, the substituteFrom ConfigMaps and Secrets of the tree's
// substitute-from.yaml (the same data is passed to kustomize.Build), and a
// Kustomization carrying the case's spec. All Kustomizations are created
// before any test waits, so Flux reconciles them side by side.
//
// For each case the test then checks, once Flux reports Ready:
//
//   - the Kustomization's .status.inventory is exactly the set of rendered
//     objects (namespace, name, group, kind and version);
//   - every leaf reflux rendered is live with the same value. The render is
//     first normalised the way kustomize-controller's apply step normalises
//     it (github.com/fluxcd/pkg/ssa/normalize: typed round trip, Secret
//     stringData into data, default port protocols) and stamped with Flux's
//     owner labels, kustomize.toolkit.fluxcd.io/name and /namespace. Only
//     leaves of that expectation are looked at, so server defaults do not
//     count; zero values the typed round trip writes for fields reflux never
//     rendered (a Service port's targetPort: 0, which the apiserver defaults
//     to the port) are left out. Lists must have the same length. Secret data
//     is compared decoded.
//
// The harness changes nothing that reaches the build except in two ways,
// both applied to reflux and Flux alike. kustomize-controller cannot apply a
// namespaced object with no namespace (ssa: "namespace not specified"), so a
// case whose render has one gets spec.targetNamespace set to the case's
// namespace. The namespaces a render targets without creating them are
// created first, and testdata/crds holds a schemaless stand-in for the
// ServiceMonitor CRD the components tree renders.
//
// A tree reflux cannot build is still given to Flux, and then passes only if
// Flux cannot build it either. The remote-base and helm-and-plugins trees are
// such trees: kustomize.Build refuses a remote base rather than fetch it,
// kustomize-controller runs with --no-remote-bases here and has no network,
// and neither runs Helm. Their local parts are mapped by kustomize/origin
// with kustomize.BuildOptions.SkipUnbuildable, as reflux trace builds them. The unmodelled tree, whose fields
// kustomize/origin refuses to attribute (replacements, a SOPS-encrypted
// Secret), is checked like any other: it builds identically. Note that
// kustomize-controller applies its SOPS-encrypted Secret, ENC[...] values and
// all, although no decryption is configured: its "is SOPS encrypted" guard
// runs after normalisation has dropped the Secret's top-level sops key, so it
// never fires for a v1 Secret.
//
// TestComparisonCanFail, TestOwnerLabelsAreChecked and
// TestInventoryCheckCanFail keep the check honest: a copy of a real render,
// changed the way a reflux bug would change it, must be reported against the
// object Flux really applied, at the field that was changed.
package faithful
