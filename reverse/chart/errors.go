package chart

import "errors"

// Sentinel errors callers branch on.
var (
	// ErrValues is returned for values that do not parse as a YAML map, or
	// that hold something JSON cannot encode.
	ErrValues = errors.New("values do not parse")
	// ErrRender is returned when the chart fails to render with the
	// release's values: a template that does not parse, a required value
	// missing, a document that is not a Kubernetes object.
	ErrRender = errors.New("chart does not render")
	// ErrObjectNotFound is returned for an object the chart did not render.
	ErrObjectNotFound = errors.New("object not rendered")
	// ErrFieldNotFound is returned for a pointer that is not a leaf field
	// of the rendered object.
	ErrFieldNotFound = errors.New("field not found")
)
