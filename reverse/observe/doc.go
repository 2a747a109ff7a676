// Package observe turns what the drift detector found on one live object
// into an observation a Drift record can be made from: each field's
// pointer in the rendered object, where the source declares it, who wrote
// it, and how the policy classifies it. It is pure: plain data in, plain
// data out, no cluster and no clock of its own.
package observe
