// Package tenancy proves reflux acts as kustomize-controller acts in a
// multi-tenant cluster, with the real reflux binary under the RBAC
// config/default installs and the real Flux controllers, both started with
// --default-service-account and --no-cross-namespace-refs:
//
//   - a tenant's drift in its own namespace is recorded and held, the dry
//     run and the hold impersonating the tenant's ServiceAccount;
//   - an object the tenant may no longer write gives Drifted=Unknown with
//     reason ImpersonationForbidden naming the verb and resource, and no
//     hold; the change is kept and recorded once the permission is back;
//   - a cross-namespace sourceRef is refused with Flux's AccessDenied;
//   - --default-service-account is who reflux acts as when a
//     Kustomization names no ServiceAccount.
package tenancy
