package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/cmd/manager"
	"github.com/reflux-dev/reflux/internal/jsonptr"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/desired"
	"github.com/reflux-dev/reflux/reverse/record"
	"github.com/reflux-dev/reflux/reverse/source"
)

// liveRef returns NAMESPACE and NAME when --kustomization names a Flux
// Kustomization in the cluster rather than a file: NS/NAME with no file of
// that name.
func liveRef(s string) (string, string, bool) {
	file, _, _ := strings.Cut(s, "#")
	if _, err := os.Stat(file); err == nil {
		return "", "", false
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.ContainsAny(name, "/#") {
		return "", "", false
	}
	return ns, name, true
}

// liveTrace is what the cluster says about one field, beside its origin.
type liveTrace struct {
	Kustomization string `json:"kustomization"`
	// Revision is the artifact built; Applied is what Flux last applied.
	Revision string `json:"revision"`
	Applied  string `json:"appliedRevision"`
	// Live and Git are the field's JSON values; empty when absent.
	Live string `json:"liveValue"`
	Git  string `json:"gitValue"`
	// Drift is the open record for the object, nil when there is none.
	Drift *liveDrift `json:"drift,omitempty"`
	// compared is set once a pointer's live value and record were read.
	compared bool
}

// liveDrift is the part of an open Drift record the on-call reads.
type liveDrift struct {
	Name  string               `json:"name"`
	State refluxv1.DriftState  `json:"state"`
	Field *refluxv1.DriftField `json:"field,omitempty"`
}

// clusterClient connects with the kubeconfig as kubectl would: the flag,
// else $KUBECONFIG, else ~/.kube/config.
func clusterClient(kubeconfig string) (client.Client, error) {
	c, _, err := clusterClientConfig(kubeconfig)
	return c, err
}

// clusterClientConfig is clusterClient with the config it was made from.
func clusterClientConfig(kubeconfig string) (client.Client, *rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("creating client: %w", err)
	}
	return c, cfg, nil
}

// runLiveTrace reads the Kustomization and its source artifact from the
// cluster as kustomize-controller does, builds it once, and prints the
// field's origin with the live and the Git value and the open drift record.
func runLiveTrace(ctx context.Context, cmd ioCmd, opts *traceOptions, ns, name string, ref origin.ObjectRef, pointer []string) error {
	c, err := clusterClient(opts.kubeconfig)
	if err != nil {
		return err
	}
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks); err != nil {
		return fmt.Errorf("no file %s, and getting Kustomization %s/%s: %w", opts.kustomization, ns, name, err)
	}
	src, err := source.Resolve(ctx, c, ks)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "reflux-trace-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	artifactURL, err := rewriteHost(src.Artifact.URL, opts.artifactHost)
	if err != nil {
		return err
	}
	if err := desired.NewFetcher(3, 256<<20, 1<<30).FetchWithContext(ctx, artifactURL, src.Artifact.Digest, dir); err != nil {
		return fmt.Errorf("fetching artifact %s: %w", artifactURL, err)
	}
	build := kustomize.BuildOptions{Root: dir, Kustomization: ks, SubstituteFrom: src.SubstituteFrom, SkipUnbuildable: true}
	build.KustomizationFile = declaringFile(dir, ks)
	var idx *origin.Index
	var res *kustomize.Result
	if err := onceWarnings(cmd.ErrOrStderr(), func() (err error) {
		idx, res, err = origin.Build(ctx, build)
		return err
	}); err != nil {
		return err
	}
	if ref, err = idx.Resolve(ref); err != nil {
		return err
	}
	lt := liveTrace{Kustomization: ns + "/" + name, Revision: src.Artifact.Revision, Applied: ks.Status.LastAppliedRevision}
	rendered := renderedObject(res, ref)
	if len(pointer) == 1 {
		if lt, err = compareLive(ctx, c, ks, rendered, normalizePointer(pointer[0]), lt); err != nil {
			return err
		}
	}
	if err := printLiveHeader(cmd.OutOrStdout(), opts.output == "json", lt); err != nil {
		return err
	}
	return printTrace(cmd.OutOrStdout(), opts.output == "json", idx, ref, "", pointer)
}

// ioCmd is what runLiveTrace needs of the cobra command.
type ioCmd interface {
	OutOrStdout() io.Writer
	ErrOrStderr() io.Writer
}

func normalizePointer(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// rewriteHost points an in-cluster artifact URL at host (a port-forward of
// source-controller) when one is given.
func rewriteHost(raw, host string) (string, error) {
	if host == "" {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parsing artifact URL: %w", err)
	}
	u.Host = host
	return u.String(), nil
}

func renderedObject(res *kustomize.Result, ref origin.ObjectRef) *unstructured.Unstructured {
	for _, o := range res.Objects {
		if origin.RefOf(o) == ref {
			return o
		}
	}
	return nil
}

// compareLive reads the live object and its open drift record.
func compareLive(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, rendered *unstructured.Unstructured, ptr string, lt liveTrace) (liveTrace, error) {
	if rendered == nil {
		return lt, fmt.Errorf("%w: %s", origin.ErrObjectNotFound, ptr)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendered.GroupVersionKind())
	key := client.ObjectKey{Namespace: rendered.GetNamespace(), Name: rendered.GetName()}
	if err := c.Get(ctx, key, live); err != nil {
		return lt, fmt.Errorf("getting live %s %s: %w", rendered.GetKind(), key, err)
	}
	lt.Git, lt.Live, lt.compared = jsonValue(rendered.Object, ptr), jsonValue(live.Object, ptr), true
	d := &refluxv1.Drift{}
	name := record.Name(refluxv1.KustomizationRef{Name: ks.Name, Namespace: ks.Namespace}, refluxv1.ObjectRef{
		APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Namespace: live.GetNamespace(), Name: live.GetName()})
	err := c.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: name}, d)
	switch {
	case apierrors.IsNotFound(err):
		return lt, nil
	case err != nil:
		return lt, fmt.Errorf("getting Drift %s/%s: %w", ks.Namespace, name, err)
	}
	switch d.Status.State {
	case refluxv1.DriftResolved, refluxv1.DriftDismissed, refluxv1.DriftExpired:
		return lt, nil
	}
	lt.Drift = &liveDrift{Name: d.Name, State: d.Status.State}
	for i := range d.Spec.Fields {
		if d.Spec.Fields[i].Pointer == ptr {
			lt.Drift.Field = &d.Spec.Fields[i]
		}
	}
	return lt, nil
}

// jsonValue is the value at ptr as JSON, "" when absent.
func jsonValue(obj map[string]interface{}, ptr string) string {
	v, ok := jsonptr.Get(obj, ptr)
	if !ok {
		return ""
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func printLiveHeader(out io.Writer, asJSON bool, lt liveTrace) error {
	if asJSON {
		data, err := json.Marshal(lt)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	}
	fmt.Fprintf(out, "# Kustomization %s, artifact %s", lt.Kustomization, lt.Revision)
	if lt.Applied != lt.Revision {
		fmt.Fprintf(out, " (Flux last applied %s)", lt.Applied)
	}
	fmt.Fprintln(out)
	if !lt.compared {
		return nil // no pointer: the listing follows
	}
	fmt.Fprintf(out, "live:  %s\ngit:   %s\n", orAbsent(lt.Live), orAbsent(lt.Git))
	switch {
	case lt.Drift == nil:
		_, err := fmt.Fprintln(out, "drift: none open")
		return err
	case lt.Drift.Field != nil:
		_, err := fmt.Fprintf(out, "drift: %s  %s  (%s, %s %s)\n", lt.Drift.Name, lt.Drift.State,
			lt.Drift.Field.ChangeType, lt.Drift.Field.Action, lt.Drift.Field.Severity)
		return err
	}
	_, err := fmt.Fprintf(out, "drift: %s  %s  (this field is not in it)\n", lt.Drift.Name, lt.Drift.State)
	return err
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// declaringFile finds the file in the artifact that declares ks, as a
// cluster repository holds its own Kustomizations (clusters/<name>/), so
// fields the spec sets point at their lines. It is used only when its spec
// is the cluster's; "" otherwise, and those fields are refused.
func declaringFile(root string, ks *kustomizev1.Kustomization) string {
	var found string
	_ = walkYAML(root, func(p string, data []byte) bool {
		if !strings.Contains(string(data), kustomizev1.GroupVersion.Group) {
			return true
		}
		git, err := kustomize.SelectKustomization(p, ks.Namespace+"/"+ks.Name)
		if err != nil || !sameSpec(git, ks) {
			return true
		}
		found = p
		return false
	})
	return found
}
