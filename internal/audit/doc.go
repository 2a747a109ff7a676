// Package audit receives Kubernetes audit events from the kube-apiserver's
// audit webhook backend and remembers who last wrote each object, so that a
// drift record can name the user behind a change. managedFields only name
// the field manager ("kubectl-edit"); the audit log names the person.
package audit
