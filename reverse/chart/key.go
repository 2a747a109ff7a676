package chart

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"regexp"
	"sort"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// CacheKey names what an Analysis depends on: the chart (Digest) and the
// values with what of the release the templates read (ValuesHash).
type CacheKey struct {
	ChartDigest string
	ValuesHash  string
}

// KeyOf returns the key of ch rendered with values for rel. The release's
// revision and whether it is an upgrade count only where the chart or the
// values could read them (readsRevision): otherwise every release version
// of the same chart and values renders the same, and shares one key.
func KeyOf(ch *chartv2.Chart, values map[string]any, rel Release) (CacheKey, error) {
	digest, err := Digest(ch)
	if err != nil {
		return CacheKey{}, err
	}
	reads, err := readsRevision(ch, values)
	if err != nil {
		return CacheKey{}, err
	}
	if !reads {
		rel.Revision, rel.IsUpgrade = 0, false
	}
	vh, err := ValuesHash(values, rel)
	if err != nil {
		return CacheKey{}, err
	}
	return CacheKey{ChartDigest: digest, ValuesHash: vh}, nil
}

// Digest hashes what of ch a render reads: its metadata, lock, templates,
// files, default values and schema, and its dependencies' digests. It is
// computed from the chart itself because a release in Helm's storage
// carries its chart but no artifact digest; modification times are left
// out, so the same chart packaged twice has one digest.
func Digest(ch *chartv2.Chart) (string, error) {
	h := sha256.New()
	if err := digestInto(h, ch); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func digestInto(h hash.Hash, ch *chartv2.Chart) error {
	deps := make([]string, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		sub := sha256.New()
		if err := digestInto(sub, d); err != nil {
			return err
		}
		deps = append(deps, hex.EncodeToString(sub.Sum(nil)))
	}
	sort.Strings(deps) // as a set: the loader's order is not the chart's
	raw, err := json.Marshal(struct {
		Metadata     *chartv2.Metadata `json:"metadata"`
		Lock         *chartv2.Lock     `json:"lock"`
		Templates    []namedData       `json:"templates"`
		Files        []namedData       `json:"files"`
		Values       map[string]any    `json:"values"`
		Schema       []byte            `json:"schema"`
		Dependencies []string          `json:"dependencies"`
	}{ch.Metadata, ch.Lock, sortedFiles(ch.Templates), sortedFiles(ch.Files), ch.Values, ch.Schema, deps})
	if err != nil {
		return fmt.Errorf("digest of chart %s: %w", ch.Name(), err)
	}
	_, err = h.Write(raw)
	return err
}

type namedData struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

func sortedFiles(files []*common.File) []namedData {
	out := make([]namedData, 0, len(files))
	for _, f := range files {
		out = append(out, namedData{Name: f.Name, Data: f.Data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// releaseRead matches text that may read .Release.Revision,
// .Release.IsUpgrade or .Release.IsInstall: the names, or .Release taken
// whole (toYaml .Release, index .Release "Revision" is caught by name).
var releaseRead = regexp.MustCompile(`Revision|IsUpgrade|IsInstall|\.Release(?:[^.\w]|$)`)

// readsRevision tells whether a render of ch with values may depend on
// the release's revision. It errs towards yes: a template, a file (tpl
// renders files too) or a value (tpl renders values) that merely names
// one keeps the revision in the key, which only costs a render per
// release version, as before the cache.
func readsRevision(ch *chartv2.Chart, values map[string]any) (bool, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrValues, err)
	}
	if releaseRead.Match(raw) {
		return true, nil
	}
	return chartReadsRevision(ch)
}

func chartReadsRevision(ch *chartv2.Chart) (bool, error) {
	for _, files := range [][]*common.File{ch.Templates, ch.Files} {
		for _, f := range files {
			if releaseRead.Match(f.Data) {
				return true, nil
			}
		}
	}
	raw, err := json.Marshal(ch.Values)
	if err != nil {
		return false, fmt.Errorf("%w: chart %s: %w", ErrValues, ch.Name(), err)
	}
	if releaseRead.Match(raw) {
		return true, nil
	}
	for _, d := range ch.Dependencies() {
		if reads, err := chartReadsRevision(d); reads || err != nil {
			return reads, err
		}
	}
	return false, nil
}

// ValuesHash hashes what a render depends on besides the chart: the
// release's values and the release's name, namespace, revision and
// install or upgrade, which templates read too (KeyOf leaves the last two
// out where they cannot). Map order does not matter: encoding/json writes
// keys sorted.
func ValuesHash(values map[string]any, rel Release) (string, error) {
	vals, err := normalize(values)
	if err != nil {
		return "", err
	}
	rev := rel.Revision
	if rev == 0 {
		rev = 1 // renders as revision 1, see Release
	}
	raw, err := json.Marshal(struct {
		Values    map[string]any `json:"values"`
		Name      string         `json:"name"`
		Namespace string         `json:"namespace"`
		Revision  int            `json:"revision"`
		IsUpgrade bool           `json:"isUpgrade"`
	}{vals, rel.Name, rel.Namespace, rev, rel.IsUpgrade})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrValues, err)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
