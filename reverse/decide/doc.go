// Package decide says what to do with a live object's Drift record and
// hold, as pure functions over plain data: create, update, reopen,
// resolve, dismiss or finalize the record, and hold or release the object.
// The engine's executor applies a Decision; nothing here talks to the
// cluster, so every transition is a row in a table test. The first
// decision comes before the engine: Meaningful tells the live watch which
// updates are news at all, and which are only reflux's own hold.
//
// Transitions, by what is known of the object:
//
//	record            live drift     decision
//	none              none           nothing; release a hold taken before evaluation
//	none              some           Create (hold if a rule holds and Flux reverts)
//	open              same or more   Update (only what changed; last-seen at most once a minute)
//	open              none           Resolve when the applied revision declares what was seen
//	                                 live (Merged), or when the object is held, so a person
//	                                 or tool, not Flux, put Git's values back (Reverted);
//	                                 held, but Flux wrote it after the change (an apply
//	                                 under way as the hold landed): keep it open, release;
//	                                 else keep it open as evidence
//	closed            same           nothing while Flux restores Git; finish a failed release
//	                                 (dismissed or expired: and ask Flux to reconcile)
//	closed            other          Reopen: a new divergence, a clean record
//	dismiss asked     any            Dismiss: release, ask Flux to reconcile
//	deleted+dismissed none           Finalize: let the record go
//	Pending           some           Update: the render fills it in (Held, Detected)
//	Pending           none, or gone  Resolve as NoDrift
//
// A change no render can evaluate yet is decided by Pending: recorded at
// once as a Pending record that names its writer and the fields it
// holds, and held where Flux would revert it, so that nobody waits for a
// render to see it.
//
// A hold with a maximum age (status.holdExpiresAt) is decided by Expiry
// when its timer fires: with `onExpiry: Alert` the record stays Held with
// HoldExpired=True, with `onExpiry: Release` it closes as Expired and the
// hold is released; an Expired record is closed like a dismissed one, so
// the same drift is never held again and a new one reopens it.
//
// Write-back results arrive as Branch transitions: the intent recorded
// before a push, the push itself, an intent abandoned because the push
// failed, a branch a reviewer closed, a branch reflux took the record off
// (Withdrawn) and a record none of whose fields could be written
// (NotWritten). A record is Proposed only while a branch carries its
// change; its ReverseSynced condition says which, or why none does.
//
// Every close says how in status.closed: Merged, Reverted, Dismissed,
// RecordDeleted, BranchDeleted, PullRequestClosed, HoldExpired or NoDrift.
package decide
