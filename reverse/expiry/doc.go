// Package expiry acts on holds that reach their maximum age (issue 11,
// break-glass expiry). It is time-driven: each record with a limited hold
// arms one timer, a delaying workqueue item due at its
// status.holdExpiresAt, and a worker of its own acts when it fires.
// Nothing polls, the live workers never wait on it, and it needs no render
// and no Git: the decision (decide.Expiry) reads only the record and the
// policy's onExpiry, and the executor applies it.
package expiry
