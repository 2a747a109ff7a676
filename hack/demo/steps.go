package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// step is one stage of the demo. Steps run in order and the first failure
// ends the demo, so a later step may rely on everything before it.
type step struct {
	// name says what the step does, in the imperative: it is printed as
	// the step starts and in its failure.
	name string
	// run does the work.
	run func(ctx context.Context) error
	// logs, when set, returns the log files that explain a failure of the
	// step; the tail of each is printed under the error.
	logs func() []string
}

// logTailLines is how much of each log a failed step prints: enough for
// the error and its context, short enough to read in a terminal.
const logTailLines = 25

// errInterrupted marks a step cut short by Ctrl-C or SIGTERM; that is
// how the user stops the demo, not a failure to explain.
var errInterrupted = errors.New("interrupted")

// stepError is a failed or interrupted step. runSteps has already
// reported it in full, so a caller only needs the step's name.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }

func (e *stepError) Unwrap() error { return e.err }

// runSteps runs steps in order, printing each, and stops at the first
// error. A failed step prints a one-line cause and the tail of its logs.
func runSteps(ctx context.Context, out io.Writer, steps []step) error {
	for i, s := range steps {
		fmt.Fprintf(out, "==> [%d/%d] %s\n", i+1, len(steps), s.name)
		start := time.Now()
		err := s.run(ctx)
		if err == nil {
			fmt.Fprintf(out, "    done in %s\n", time.Since(start).Round(100*time.Millisecond))
			continue
		}
		if ctx.Err() != nil {
			fmt.Fprintf(out, "    interrupted\n")
			return &stepError{step: s.name, err: errInterrupted}
		}
		fmt.Fprintf(out, "FAILED: %s: %s\n", s.name, oneLine(err))
		if s.logs != nil {
			printTails(out, s.logs())
		}
		return &stepError{step: s.name, err: err}
	}
	return nil
}

// oneLine keeps a multi-line error (an apiserver rejection, a joined
// error) on the single line the failure report promises.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// printTails prints the last lines of each log that exists.
func printTails(out io.Writer, paths []string) {
	for _, p := range paths {
		tail, err := tailLines(p, logTailLines)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(out, "    (cannot read %s: %v)\n", p, err)
			}
			continue
		}
		fmt.Fprintf(out, "--- end of %s ---\n%s", p, tail)
		if len(tail) > 0 && tail[len(tail)-1] != '\n' {
			fmt.Fprintln(out)
		}
	}
}

// tailReadBytes bounds how much of a log tailLines reads: controllers at
// debug level write megabytes, and the cause is at the end.
const tailReadBytes = 64 << 10

// tailLines returns the last n lines of the file at path.
func tailLines(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if info.Size() > tailReadBytes {
		if _, err := f.Seek(-tailReadBytes, io.SeekEnd); err != nil {
			return nil, fmt.Errorf("seeking in %s: %w", path, err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil), nil
}
