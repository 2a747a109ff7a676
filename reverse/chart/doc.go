// Package chart says which Helm values key sets a field that a chart
// renders (issue 19 §5): a live edit of an object a HelmRelease installed
// is traced to the values line in Git that would make it, or to the
// chart's own values.yaml, or to the template itself.
//
// # Rendering
//
// Load reads a chart directory or packaged .tgz with Helm's loader;
// Render renders it offline with Helm's own engine, values coalescing and
// dependency processing (helm.sh/helm/v4, the version helm-controller
// v1.6.2 uses), as helm template does: default capabilities, no cluster
// lookups, NOTES.txt left out. Documents are split with Kubernetes' YAML
// reader and decoded as kubectl decodes them. Objects are keyed by
// apiVersion, kind, namespace and name; one without a namespace takes the
// release's, unless its kind is cluster-scoped (BuiltinClusterScoped, or
// the caller's Release.ClusterScoped, since offline a custom kind's scope
// is not known). Hooks are rendered like any other object; crds/ is not
// (helm template leaves it out too). The caller passes the release's
// values already merged (spec.values with valuesFrom). A HelmRelease's
// postRenderers are not applied here, since no values key changes what
// they set: package postrender applies them to this package's render
// (the CLI's trace and diff), and helmlive, which compares with the
// release's manifest, traces a field they changed to the line of the
// patch (postrender.Find) or refuses it as post-renderer.
//
// # Why confirm by rendering
//
// Templates are programs: a value reaches a field through include, tpl,
// default, quote, toYaml, or not at all, and a field that shows a key's
// value may hold it by coincidence. Reading templates can only guess. So
// an Analysis renders the chart again with keys changed (a probe) and
// diffs each render against the release's own: a key counts for a field
// only when a render that changed that key changed that field, and
// either changed that key alone or changed it to a marked string whose
// marker the field shows, with nothing else in the render unexplained.
//
// A probe changes a key to a sentinel of its own type and shape (see
// sentinel): a bool is negated, a number becomes the number one more (a
// string would break arithmetic and comparisons, a large number would
// print as 1e+06 and make until loop), a quantity keeps its unit
// (512Mi → 900017Mi), and any other string keeps its text and gains a
// marker (nginx → nginx-rfx00010), so the marker can be found in the
// output whatever the template did on the way. Probes skip
// values.schema.json: a sentinel is there to be traced, not to be valid.
//
// # Cost
//
// Rendering once per key per field would be blind, and once per key is
// still a render for every key of a chart that has hundreds. Instead
// (search.go, batch.go):
//
//  1. One render changes every string key to its marked sentinel at
//     once. A field it changed only by putting markers in for their
//     keys' values (taking the markers out again gives the field as it
//     was) is explained: each of those keys, changed alone, would make
//     it that value with the others' put back. The markers prove which
//     key the text came from; that nothing else in the render changed
//     unexplained shows no key steered another's way there.
//  2. Fields that render changed otherwise (removed, a marker hidden by
//     b64enc or upper, a template default put around it) are settled
//     within its keys: suspects are probed alone first (keys whose
//     markers still show, keys the field's template line reads by name),
//     then the rest as one group, halved only while it changes one.
//  3. A number key is probed alone when it equals a field.
//  4. Every other key (bools, numbers that do not show) is probed in one
//     group: a group that changes none of the fields wanted is cleared in
//     one render, one that changes some is halved down to the keys that
//     do (a bool gating an object, a number the template adds to).
//
// Finding one field takes a few renders; mapping a release about one
// render per bool or number the chart reads and a few for the rest (see
// bench_test.go). Probes are kept, so Find after Find, and Find after
// Map, reuse them. A failed render is halved too; a key that fails alone
// is reported Unprobed (a template that fails on any value but a few).
// Group probes and the marked render rest on one assumption: changes of
// several keys do not cancel each other out (the same field with a and b
// changed as with neither). Tests check Map against a probe of every key
// alone on every chart here and on a generated one of 90 keys.
//
// # Kinds
//
// From what changing each key alone does to a field (its solo probe, or
// what the marked render explained):
//
//   - A key whose change removes the field or its object, or adds or
//     removes a list element before it, is a condition (sidecar.enabled,
//     autoscaling.enabled for replicas), listed but not a source of the
//     value.
//   - values: one key changes the value, its sentinel comes out as the
//     field exactly (quote and toYaml keep it; a number quoted is the
//     same number), and its own value is the field's; the release's
//     values set it.
//   - chart-default: the same, but only the chart's values.yaml sets the
//     key, so the release's values must add it.
//   - template-literal: no key changes the value; the template writes it,
//     or makes it of .Release or .Chart.
//   - computed: anything else that keys change. An image written as
//     {{ .Values.image.repository }}:{{ .Values.image.tag }} is computed,
//     with both keys listed: a live image names neither key alone, and
//     splitting it back is a guess this package does not make. So is a
//     key the template transforms (b64enc, upper, add 1) or replaces with
//     its own default (the field is not the key's value).
//
// # Key notation
//
// A key is written with dots between map keys and list indexes in
// brackets: replicaCount, resources.limits.memory, env[0].value. A map
// key that is not letters, digits, '-' and '_' is quoted in brackets:
// podAnnotations["prometheus.io/port"]. Key.Pointer is the same key as a
// JSON pointer into the values (/env/0/value), for editing the
// HelmRelease's spec.values. Lists are indexed as coalesced: Helm
// replaces a list of the chart's whole when the release's values set it.
//
// # Template locations
//
// locate.go finds, by text, the line of the chart's template sources that
// reads a key: the longest dotted prefix of the key written as
// .Values.<prefix> and not followed by more of a name (toYaml
// .Values.resources reads resources.limits.memory; .Values.image.pullPolicy
// does not read image.tag), searched in the object's own template from
// the document that declares its kind, then the chart's partials
// (_helpers.tpl, where include's named templates live), then its other
// templates. A template literal is found first by structure
// (structure.go): the object's template read as YAML text, indentation
// nesting keys and "- " starting list elements, action-only lines
// skipped, gives the line whose key path is the field's. Where the
// template builds the structure itself (toYaml), it falls back to the
// first line of the template or its chart's partials holding the field's
// name and value. Limits: a key read through index, a variable
// ($img := .Values.image) or with blocks below the with line is found at
// its prefix or not at all; two documents of one kind in one template
// share the first; flow-style YAML ({a: b}) is not read by structure.
//
// # Whole releases
//
// Analysis.Map maps every leaf field of every rendered object at once; a
// Map is never changed once made.
//
// # Caching
//
// Cache holds Analyses, bounded, by CacheKey: the chart's Digest (a hash
// of its files, since a release in Helm's storage carries its chart but
// no artifact digest) and ValuesHash (the values, the release's name and
// namespace, and its revision only where the chart or the values may read
// it). Every release of the same chart and values shares one Analysis, so
// what one found, and the probes it rendered, serve the next release
// version too (issue 19 §8).
package chart
