// Package policy checks a ReverseSyncPolicy for what admission (schema and
// CEL) cannot: glob syntax, the commit message template, the signing key
// material, clashes between the branch prefix and real source branches,
// and whether the pull-request token reaches the forge (ForgeChecks, which
// spare a rate-limited forge API the checks that passed recently).
package policy
