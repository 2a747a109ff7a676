// Package scheduler is the write-back stage of the engine: it decides
// when a governed Kustomization's open drift goes to Git, and runs it off
// the live path. One worker per repository, so a slow or dead git server
// stalls only its own repository; work coalesced per Kustomization;
// timeouts and exponential backoff; branch and pull-request checks on a
// new source revision and at most once per interval.
//
// It owns each Kustomization's write-back bookkeeping (what was last
// written, when branches were last checked, the last outcome). Results
// come back to the records as transitions (reverse/decide.OnBranch)
// applied by the executor, the single writer of records: the write intent
// before a push, the push, records taken off a branch before reflux closes
// it, and a reviewer's closed branch.
package scheduler
