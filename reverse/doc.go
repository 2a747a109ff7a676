// Package reverse is the Git-ward half of reflux: it turns drift records
// into decisions and hands each governed Kustomization's open drift to the
// write-back engine. Sub-packages: policy (checks beyond admission),
// classify (rules and defaults), writeback (signed branches).
package reverse
