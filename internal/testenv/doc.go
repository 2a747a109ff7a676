// Package testenv starts a real, disposable GitOps environment for tests:
// etcd and kube-apiserver (through controller-runtime's envtest), the real
// Flux source-controller and kustomize-controller as child processes (and
// helm-controller for the tests that ask for it with Options.Helm), and a
// git server that speaks HTTP with basic auth and SSH. The git server counts
// the sessions each repository sees (GitServer.Requests), and a StallProxy in
// front of it plays a host that accepts connections and never answers.
//
// StartReflux runs the real reflux binary the way a platform team installs
// it: InstallReflux applies config/default (CRDs, ServiceAccount, roles and
// bindings), and the process connects with a TokenRequest token of that
// ServiceAccount (InstalledUser), so config/rbac is what it may do. Its
// access to the objects Flux applies is an aggregated ClusterRole, so the
// first install also starts kube-controller-manager with only its
// clusterrole-aggregation controller, and installs wait until the rules
// are aggregated. Only the environment's own admin client (Env.Config) is
// in system:masters; people in tests are AddBreakGlassUser's
// cluster-admins.
//
// Everything listens on loopback only. The binaries come from the repository's
// bin/ directory, which `make testbin` fills; nothing is downloaded at test
// time. FluxDirEnv and KubeDirEnv swap in other builds of the Flux
// controllers or of the control plane (`make test-flux-latest`, `make
// test-kube-matrix`), and Env.Kubernetes reports the apiserver that ran.
// Every process writes its log to a file under Env.Dir so a failing test
// can print them (New does this on failure).
//
// The environment exists because reflux's behaviour is defined against what
// Flux really does to live objects, and fakes of kustomize-controller's
// server-side apply would encode our guesses instead of its behaviour.
package testenv
