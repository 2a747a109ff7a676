package chart

import (
	"encoding/json"
	"fmt"
	"os"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// Load reads a chart from a directory or a packaged .tgz, with Helm's own
// loader, so .helmignore, dependencies under charts/ and values.yaml are
// read as helm template reads them. A path that does not exist gives an
// error that wraps fs.ErrNotExist.
func Load(path string) (*chartv2.Chart, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	c, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", path, err)
	}
	return c, nil
}

// ParseValues decodes values YAML (a HelmRelease's spec.values, or a
// valuesFrom document) as Helm does, numbers included: they decode as
// float64, which is what templates then print.
func ParseValues(data []byte) (map[string]any, error) {
	v, err := common.ReadValues(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValues, err)
	}
	return v, nil
}

// normalize copies values through JSON, so whatever decoder the caller
// used (yaml.v3 gives int, unstructured int64), numbers reach the
// templates as Helm gives them (float64) and the caller's map is never
// shared with a render. helm-controller reads spec.values through JSON
// too.
func normalize(values map[string]any) (map[string]any, error) {
	if values == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValues, err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValues, err)
	}
	return out, nil
}
