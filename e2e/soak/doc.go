// Package soak is reflux's soak (issue 22 §1): the real apiserver, etcd,
// Flux, Gitea and two replicas of the real reflux binary under its
// installed RBAC, with leader election, take a steady stream of live
// edits while a seeded schedule of faults kills, pauses and cuts them
// off: the leader SIGKILLed (also inside write-back, between commit and
// push, push and the record's update, a pull request's creation and its
// recording), kube-apiserver restarted, watches expired by an etcd
// compaction, the git server down, the forge answering 500 and 429, and
// reviewers merging, closing, deleting a branch and pushing onto one.
// Afterwards it checks that nothing was lost live or in Git, nothing
// written twice and no Secret value leaked, that the backlog drained
// within a stated bound and memory came back, and prints the figures.
//
// `make soak-short` runs the short variant (SOAK_SHORT=1 under -race: two minutes, a
// few of each fault); `make soak` the full one, which writes its figures
// to bench/results.md. SOAK_SEED replays a schedule.
package soak
