package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// showDrift waits until reflux has recorded both edits, holds both
// objects and has named the person from the audit log, then prints the
// records as a dashboard would.
func (d *demo) showDrift(ctx context.Context) error {
	err := d.waitFor(ctx, recordTimeout, "waiting for held, attributed Drift records", func(ctx context.Context) error {
		flag, err := d.heldRecord(ctx, "ConfigMap", flagsName, flagPointer)
		if err != nil {
			return err
		}
		replicas, err := d.heldRecord(ctx, "Deployment", appName, replicasPtr)
		if err != nil {
			return err
		}
		d.scenario.flagRecord, d.scenario.replicasRecord = flag, replicas
		return nil
	})
	if err != nil {
		return err
	}
	out := d.opts.out
	fmt.Fprintln(out)
	for _, rec := range []*refluxv1.Drift{d.scenario.flagRecord, d.scenario.replicasRecord} {
		printRecord(out, rec)
		fmt.Fprintln(out)
	}
	d.printKubectl(ctx, "get", "drifts", "-A")
	return nil
}

// heldRecord returns the open record of the object when it lists pointer,
// is held, and the field names its writer from the audit log. Its error
// says which of those is still missing.
func (d *demo) heldRecord(ctx context.Context, kind, name, pointer string) (*refluxv1.Drift, error) {
	rec, err := d.record(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	f := fieldOf(rec, pointer)
	switch {
	case f == nil:
		return nil, fmt.Errorf("Drift %s/%s does not list %s yet", rec.Namespace, rec.Name, pointer)
	case rec.Status.HeldSince == nil:
		return nil, fmt.Errorf("Drift %s/%s is %s, not held", rec.Namespace, rec.Name, stateOf(rec))
	case f.Modifier == nil || f.Modifier.User == "":
		return nil, fmt.Errorf("Drift %s/%s does not name who changed %s", rec.Namespace, rec.Name, pointer)
	}
	return rec, nil
}

// record returns the demo Kustomization's newest Drift record for the
// object of kind and name in the app namespace.
func (d *demo) record(ctx context.Context, kind, name string) (*refluxv1.Drift, error) {
	list := &refluxv1.DriftList{}
	if err := d.env.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Drift records: %w", err)
	}
	var found *refluxv1.Drift
	for i := range list.Items {
		rec := &list.Items[i]
		if rec.Spec.Kustomization.Namespace != fluxNamespace || rec.Spec.Kustomization.Name != appName ||
			rec.Spec.Object.Kind != kind || rec.Spec.Object.Name != name || rec.Spec.Object.Namespace != appNamespace {
			continue
		}
		if found == nil || found.CreationTimestamp.Before(&rec.CreationTimestamp) {
			found = rec
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no Drift record for %s %s/%s yet", kind, appNamespace, name)
	}
	return found, nil
}

func fieldOf(rec *refluxv1.Drift, pointer string) *refluxv1.DriftField {
	for i := range rec.Spec.Fields {
		if rec.Spec.Fields[i].Pointer == pointer {
			return &rec.Spec.Fields[i]
		}
	}
	return nil
}

func stateOf(rec *refluxv1.Drift) string {
	if rec.Status.State == "" {
		return "without a state"
	}
	return string(rec.Status.State)
}

// printRecord prints one record as a card: the object and the record's
// state, then each field with where Git declares it, what the policy
// decided and who changed it.
func printRecord(w io.Writer, rec *refluxv1.Drift) {
	p := &printer{w: w}
	o := rec.Spec.Object
	p.line("    %s %s/%s   drift/%s in %s", o.Kind, o.Namespace, o.Name, rec.Name, rec.Namespace)
	held := "not held"
	if rec.Status.HeldSince != nil {
		held = "held since " + rec.Status.HeldSince.UTC().Format("15:04:05 UTC")
	}
	p.line("      state %s · action %s · severity %s · %s", stateOf(rec), rec.Status.Action, rec.Status.Severity, held)
	for i := range rec.Spec.Fields {
		f := &rec.Spec.Fields[i]
		p.line("      %s  %s -> %s  (%s)", f.Pointer, gitValue(f), liveValue(f), f.ChangeType)
		p.line("        origin  %s", where(f.Origin))
		p.line("        policy  %s, %s%s", f.Action, f.Severity, ruleOf(f))
		p.line("        who     %s", modifier(f.Modifier))
	}
}

func gitValue(f *refluxv1.DriftField) string {
	if f.GitValue == "" {
		return "(not in Git)"
	}
	return f.GitValue
}

func liveValue(f *refluxv1.DriftField) string {
	if f.LiveValue == "" {
		return "(removed)"
	}
	return f.LiveValue
}

func where(o *refluxv1.FieldOrigin) string {
	switch {
	case o == nil:
		return "(unknown)"
	case o.Refused != "":
		return "(not mapped: " + o.Refused + ")"
	case o.Line == 0:
		// An added field has no line in Git yet: the file is where the
		// edit will go.
		return fmt.Sprintf("%s (%s)", o.File, o.Kind)
	}
	return fmt.Sprintf("%s:%d:%d (%s)", o.File, o.Line, o.Column, o.Kind)
}

func ruleOf(f *refluxv1.DriftField) string {
	if f.Rule == "" {
		return " (built-in default)"
	}
	return " (rule " + f.Rule + ")"
}

func modifier(m *refluxv1.Modifier) string {
	if m == nil {
		return "(unknown)"
	}
	who := m.User
	if who == "" {
		who = "(user unknown)"
	}
	s := who + " via " + m.Manager
	if m.Time != nil {
		s += " at " + m.Time.UTC().Format("15:04:05 UTC")
	}
	return s
}

// printKubectl prints a kubectl command a user can run from the summary's
// shell and, when a kubectl is at hand, its real output. The demo does not
// depend on kubectl, so a missing one is only noted.
func (d *demo) printKubectl(ctx context.Context, args ...string) {
	p := &printer{w: d.opts.out}
	p.line("    $ kubectl %s", strings.Join(args, " "))
	b, err := d.env.Kubectl(ctx, args...)
	if err != nil {
		p.line("    (not run here: %s)", oneLine(err))
		return
	}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.line("    %s", l)
	}
}

// objectKey is the key of an object in the app namespace.
func objectKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: appNamespace, Name: name}
}
