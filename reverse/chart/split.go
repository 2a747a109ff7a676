package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// parseDocuments splits one rendered file into objects. Documents are
// split by Kubernetes' own YAML reader (a "---" line, with nothing but a
// comment after it, ends a document; a "---" inside a block scalar does
// not) and decoded as kubectl and Helm's kube client decode them, YAML
// 1.1 scalars included, so a value reads as the cluster will read it.
// Documents that are empty or only comments are skipped.
func parseDocuments(file, content string) ([]Object, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(content)))
	var out []Object
	for n := 1; ; n++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		if js[0] != '{' {
			return nil, fmt.Errorf("%s: document %d is not an object", file, n)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		out = append(out, Object{Template: file, Index: len(out), Object: u})
	}
}
