package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

func main() {
	os.Exit(realMain(os.Args[1:]))
}

// realMain returns the exit code, so every deferred cleanup has run
// before os.Exit.
func realMain(args []string) int {
	opts, err := parseFlags(args, os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	// The handler stays installed through teardown: a second Ctrl-C is
	// ignored rather than killing the demo halfway, which would leave etcd
	// and kube-apiserver running and their directories behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return exitCode(runInWorkDir(ctx, opts))
}

// runInWorkDir runs the demo in a fresh work directory and removes it
// afterwards, whatever happened.
func runInWorkDir(ctx context.Context, opts options) (err error) {
	root, err := os.MkdirTemp("", "reflux-demo-")
	if err != nil {
		return fmt.Errorf("creating work directory: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(root); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", root, rmErr))
		}
	}()
	// testenv and envtest make their directories with os.MkdirTemp. With
	// TMPDIR at root they all land in it, so the logs of a failed start can
	// be found and one RemoveAll leaves nothing behind, whatever failed.
	if err := os.Setenv("TMPDIR", root); err != nil {
		return fmt.Errorf("setting TMPDIR: %w", err)
	}
	opts.workDir = root
	closeLog, err := redirectStdLog(root, &opts)
	if err != nil {
		return err
	}
	defer closeLog()
	return run(ctx, opts)
}

// exitCode reports err in one line and maps it to the exit code: 130 for
// an interrupted setup, as a shell reports Ctrl-C, and 1 for a failure.
// A failed step has already printed its cause and logs, so unless
// teardown failed too, naming the step is enough.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	code := 1
	if errors.Is(err, errInterrupted) {
		code = 130
	}
	se, ok := err.(*stepError)
	switch {
	case ok && code == 130:
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started is stopped and removed")
	case ok:
		fmt.Fprintf(os.Stderr, "demo: step %q failed; everything it started is stopped and removed\n", se.step)
	default:
		fmt.Fprintln(os.Stderr, "demo:", oneLine(err))
	}
	return code
}

// redirectStdLog sends the standard logger to a file. The git server
// (gitkit) logs every request there, and every Flux fetch would otherwise
// interrupt the summary in the terminal.
func redirectStdLog(dir string, opts *options) (func(), error) {
	opts.gitLogPath = filepath.Join(dir, "git-server.log")
	f, err := os.Create(opts.gitLogPath)
	if err != nil {
		return nil, fmt.Errorf("creating git server log: %w", err)
	}
	log.SetOutput(f)
	return func() {
		log.SetOutput(os.Stderr)
		_ = f.Close() // the log is removed with dir
	}, nil
}

// parseFlags reads the flags, and DEMO_EXIT for `DEMO_EXIT=1 make demo`,
// where flags cannot reach the program: DEMO_EXIT=1 (or scenario) is
// --exit-after-scenario and DEMO_EXIT=setup is --exit-after-setup. When
// several ask to exit, the earliest exit wins.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var opts options
	var afterSetup, afterScenario bool
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&afterSetup, "exit-after-setup", false,
		"run the setup, print the summary and exit 0 (also DEMO_EXIT=setup)")
	fs.BoolVar(&afterScenario, "exit-after-scenario", false,
		"run the setup and the hotfix scenario and exit 0 (also DEMO_EXIT=1)")
	fs.StringVar(&opts.refluxBin, "reflux", "", "the `path` of the reflux binary to run (default: bin/reflux, which make build writes)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected arguments %q\n", fs.Args())
		return options{}, errors.New("unexpected arguments")
	}
	if afterSetup {
		opts.exit = earliest(opts.exit, exitAfterSetup)
	}
	if afterScenario {
		opts.exit = earliest(opts.exit, exitAfterScenario)
	}
	exit, err := parseDemoExit(getenv("DEMO_EXIT"))
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return options{}, err
	}
	opts.exit = earliest(opts.exit, exit)
	return opts, nil
}

// parseDemoExit reads DEMO_EXIT: a boolean, where true means after the
// scenario, or the name of the part to exit after.
func parseDemoExit(v string) (exitPoint, error) {
	switch v {
	case "":
		return exitNever, nil
	case "setup":
		return exitAfterSetup, nil
	case "scenario":
		return exitAfterScenario, nil
	}
	exit, err := strconv.ParseBool(v)
	if err != nil {
		return exitNever, fmt.Errorf("DEMO_EXIT=%q is not a boolean, setup or scenario", v)
	}
	if exit {
		return exitAfterScenario, nil
	}
	return exitNever, nil
}

// run is the demo: setup, summary, scenario, then wait for a signal. It
// always tears down what it started.
func run(ctx context.Context, opts options) (err error) {
	d, err := newDemo(opts)
	if err != nil {
		return err
	}
	out := d.opts.out
	defer func() {
		if !d.started() {
			return
		}
		fmt.Fprintln(out, "==> stopping reflux, Flux, Gitea, kube-apiserver and etcd")
		if terr := d.teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("tearing down: %w", terr))
			return
		}
		fmt.Fprintln(out, "    stopped; nothing is left running")
	}()
	if err := runSteps(ctx, out, d.setupSteps()); err != nil {
		return err
	}
	d.printSummary(out)
	if d.opts.exit == exitAfterSetup {
		return nil
	}
	if err := runSteps(ctx, out, d.scenarioSteps()); err != nil {
		return err
	}
	if d.opts.exit == exitAfterScenario {
		return nil
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop the demo and remove everything.")
	if err := d.watchReflux(ctx, out); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return nil
}
