//go:build race

package soak

// raceEnabled: the short soak runs in `make soak-short`, beside the
// journeys, with reflux built with -race.
const raceEnabled = true
