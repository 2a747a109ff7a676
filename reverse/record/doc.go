// Package record builds and merges Drift records: the durable evidence of a
// live change, written from the watch event that saw it because Flux's next
// reconcile erases the change from the cluster.
package record
