package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// runCases runs each case as a sub-benchmark named after it. A case is
// one measurement, whatever b.N: it is minutes of real work in a fresh
// environment, and b.N is 1 under make bench's -benchtime 1x as under the
// default -benchtime 1s (the first run outlasts it). A larger -benchtime
// Nx still measures once and logs so.
func runCases[C interface{ name() string }](b *testing.B, cases []C, run func(*testing.B, C)) {
	for _, c := range cases {
		b.Run(c.name(), func(b *testing.B) {
			if b.N > 1 {
				b.Logf("b.N=%d: a case measures once per run", b.N)
			}
			run(b, c)
		})
	}
}

// step is one stage of a case.
type step struct {
	name string
	run  func(context.Context) error
}

// runSteps runs the steps in order and stops at the first that fails,
// saying which, how long in, and the figures measured so far.
func runSteps(ctx context.Context, steps []step, soFar fmt.Stringer) error {
	began := time.Now()
	for _, s := range steps {
		stepBegan := time.Now()
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s (after %s, %s into the case): %w\nfigures so far: %s",
				s.name, time.Since(stepBegan).Round(time.Second), time.Since(began).Round(time.Second), err, soFar)
		}
	}
	return nil
}
