package origin

import (
	"errors"
	"fmt"
)

// Kind names the kind of layer that set a value.
type Kind string

// The kinds of layer a value can come from.
const (
	KindResource          Kind = "resource"
	KindPatch             Kind = "patch"
	KindImages            Kind = "images"
	KindReplicas          Kind = "replicas"
	KindGeneratorLiteral  Kind = "generator-literal"
	KindGeneratorEnv      Kind = "generator-env"
	KindGeneratorFile     Kind = "generator-file"
	KindNamespace         Kind = "namespace"
	KindNameAffix         Kind = "name-affix"
	KindLabels            Kind = "labels"
	KindAnnotations       Kind = "annotations"
	KindKustomizationSpec Kind = "kustomization-spec"
	KindSubstitution      Kind = "substitution"
	// KindGeneratorName is a generator's name: (or namespace:) line, which
	// declares the generated object's metadata verbatim when no hash
	// suffix is added (generatorOptions.disableNameSuffixHash).
	KindGeneratorName Kind = "generator-name"
)

// Reason names why a field's origin is refused.
type Reason string

// The reasons a field can be refused.
const (
	// ReasonRemoteBase: the object comes from a remote base we do not fetch.
	ReasonRemoteBase Reason = "remote-base"
	// ReasonHelmChart: the object comes from helmCharts inflation.
	ReasonHelmChart Reason = "helm-chart"
	// ReasonPlugin: generators/transformers/validators plugins are not modelled.
	ReasonPlugin Reason = "plugin"
	// ReasonTransformerConfig: configurations/crds/openapi change field specs we do not model.
	ReasonTransformerConfig Reason = "transformer-config"
	// ReasonReplacements: replacements and vars are not modelled.
	ReasonReplacements Reason = "replacements"
	// ReasonHashSuffix: the value was produced by a generator's hash suffix.
	ReasonHashSuffix Reason = "hash-suffix"
	// ReasonSOPS: the object is SOPS-encrypted in the source tree.
	ReasonSOPS Reason = "sops-encrypted"
	// ReasonGenerated: the value is synthesised by kustomize (e.g. a generated
	// object's apiVersion) and is declared nowhere.
	ReasonGenerated Reason = "generated-field"
	// ReasonBuildMetadata: the value is a build annotation added by kustomize.
	ReasonBuildMetadata Reason = "build-metadata"
	// ReasonInlinePatchStyle: an inline patch is not a literal block scalar,
	// so positions inside it cannot be mapped to the file.
	ReasonInlinePatchStyle Reason = "inline-patch-not-literal-block"
	// ReasonMultipleVariables: the value combines several substitutions.
	ReasonMultipleVariables Reason = "multiple-variables"
	// ReasonNoKustomizationFile: the value was set by the Flux Kustomization
	// spec but no file declaring it was given.
	ReasonNoKustomizationFile Reason = "no-kustomization-file"
	// ReasonModelFailed: the model could not be built for this tree.
	ReasonModelFailed Reason = "model-failed"
	// ReasonNotInModel: krusty rendered a field the model does not produce.
	ReasonNotInModel Reason = "not-in-model"
	// ReasonModelDisagrees: the model's value differs from krusty's.
	ReasonModelDisagrees Reason = "model-disagrees"
)

// reasonWhy holds the one sentence a user reads for each reason.
var reasonWhy = map[Reason]string{
	ReasonRemoteBase:          "The object comes from a remote base, which reflux never fetches; change it where the base is maintained, or pin another ref in the resources entry.",
	ReasonHelmChart:           "The object is inflated from a Helm chart, which kustomize-controller does not run; change the chart's values instead.",
	ReasonPlugin:              "A generator, transformer or validator plugin produces or rewrites the value. reflux does not run plugins, and kustomize-controller refuses to build a tree with one that is not a kustomize builtin (an exec or container KRM function, say).",
	ReasonTransformerConfig:   "configurations, crds or openapi change which fields kustomize's transformers touch, and that is not modelled.",
	ReasonReplacements:        "replacements or vars copy the value from another field, and that is not modelled.",
	ReasonHashSuffix:          "kustomize appends a hash of the generated data to the name, so no file holds the rendered name; the generator's name line declares the rest.",
	ReasonSOPS:                "The object is SOPS-encrypted in Git, so its fields can only be edited encrypted.",
	ReasonGenerated:           "kustomize synthesises the value and no file declares it.",
	ReasonBuildMetadata:       "kustomize adds the value as build metadata; no file declares it.",
	ReasonInlinePatchStyle:    "The inline patch is not a literal block scalar (|), so positions inside it cannot be mapped to the file.",
	ReasonMultipleVariables:   "The value combines several post-build variables, so no single declaration holds it.",
	ReasonNoKustomizationFile: "The Flux Kustomization's spec sets the value, but no file declaring that Kustomization was given.",
	ReasonModelFailed:         "reflux could not model this tree, so no field is attributed rather than guessed.",
	ReasonNotInModel:          "krusty rendered a field reflux's model does not produce, so it is not attributed rather than guessed.",
	ReasonModelDisagrees:      "reflux's model computes another value than krusty renders, so the field is not attributed rather than guessed.",
}

// Why says in one sentence why fields are refused for the reason.
func (r Reason) Why() string {
	if w, ok := reasonWhy[r]; ok {
		return w
	}
	return "The origin is not attributed rather than guessed."
}

// Sentinel errors callers branch on.
var (
	// ErrObjectNotFound is returned for an object that was not rendered.
	ErrObjectNotFound = errors.New("object not rendered")
	// ErrFieldNotFound is returned for a pointer that is not a leaf of the object.
	ErrFieldNotFound = errors.New("field not found")
)

// ObjectRef identifies a rendered object, by its rendered name.
type ObjectRef struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the ref as KIND/[NAMESPACE/]NAME.
func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + "/" + r.Name
	}
	return kind + "/" + r.Namespace + "/" + r.Name
}

// Layer is one step that set or overrode a value.
type Layer struct {
	// File is relative to the repository root, slash separated. For
	// substituteFrom variables it is "ConfigMap/NAME" or "Secret/NAME".
	File string `json:"file"`
	// Line and Column are 1-based, Column counted in characters (as
	// yaml.v3 and editors count), and point at the value node; 0 when the
	// value lives outside any file (substituteFrom data).
	Line   int  `json:"line"`
	Column int  `json:"column"`
	Kind   Kind `json:"kind"`
	// Via names the field that applied the layer, such as "namePrefix",
	// "patches[1]" or "images[0].newTag".
	Via string `json:"via,omitempty"`
	// Variable names the post-build variable of a substitution layer.
	Variable string `json:"variable,omitempty"`

	refused Reason
}

// Position renders FILE:LINE:COL, or just FILE for values defined outside
// any file (substituteFrom sources).
func (l Layer) Position() string {
	if l.Line == 0 {
		return l.File
	}
	return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column)
}

// Origin is where a rendered value was declared: the last layer of Chain.
type Origin struct {
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Column   int     `json:"column"`
	Kind     Kind    `json:"kind"`
	Variable string  `json:"variable,omitempty"`
	Chain    []Layer `json:"chain"`
}

// Field is one leaf of a rendered object with its origin or refusal.
type Field struct {
	// Pointer is the JSON pointer of the leaf in the rendered object.
	Pointer string
	// Value is the rendered value.
	Value interface{}
	// Origin is set unless Refused is.
	Origin Origin
	// Refused names why no origin is given.
	Refused Reason
	// Edit is, for a refused field, the declaration a user edits instead
	// when there is one: a generator's name line for a hash-suffixed name,
	// the resources entry that pulls in a remote base.
	Edit *Layer
}

// RefusedError is returned by Lookup for a field whose origin is refused.
// Pointer is empty when the whole object is refused (it was not rendered
// because it comes from a remote base or a Helm chart).
type RefusedError struct {
	Object  ObjectRef
	Pointer string
	Reason  Reason
	// Edit is where the user edits instead, nil when no place is known.
	Edit *Layer
}

// Error names the field, the reason, why, and the place to edit.
func (e *RefusedError) Error() string {
	what := e.Object.String()
	if e.Pointer != "" {
		what += " " + e.Pointer
	}
	msg := fmt.Sprintf("origin of %s refused: %s: %s", what, e.Reason, e.Reason.Why())
	if e.Edit != nil {
		msg += fmt.Sprintf(" Edit %s (%s) instead.", e.Edit.Position(), e.Edit.Via)
	}
	return msg
}

// Unwrap makes a refused object match ErrObjectNotFound.
func (e *RefusedError) Unwrap() error {
	if e.Pointer == "" {
		return ErrObjectNotFound
	}
	return nil
}
