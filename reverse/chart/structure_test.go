package chart

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// structureTemplate renders a ConfigMap and a Deployment, with the
// shapes charts use: list items in both indentations, fields under
// template branches, toYaml subtrees and the same literal twice.
const structureTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "app.name" . }}
data:
  name: app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.name" . }}
spec:
  template:
    spec:
      {{- if .Values.init.enabled }}
      initContainers:
      - name: init
        image: busybox
      {{- end }}
      containers:
        - name: app
          args:
            - --port
            - "8080"
          ports:
            - name: http
              containerPort: 8080
        - name: sidecar
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`

func TestStructural(t *testing.T) {
	f := &srcFile{path: "templates/app.yaml", lines: strings.Split(structureTemplate, "\n")}
	for _, tt := range []struct {
		kind, ptr string
		line      int
		ok        bool
	}{
		{"ConfigMap", "/data/name", 6, true},
		{"ConfigMap", "/metadata/name", 4, true},
		{"Deployment", "/metadata/name", 11, true},
		{"Deployment", "/spec/template/spec/initContainers/0/image", 18, true},
		{"Deployment", "/spec/template/spec/containers/0/name", 21, true},
		{"Deployment", "/spec/template/spec/containers/0/args/1", 24, true},
		{"Deployment", "/spec/template/spec/containers/0/ports/0/containerPort", 27, true},
		{"Deployment", "/spec/template/spec/containers/1/name", 28, true},
		// toYaml writes the subtree: no line holds it.
		{"Deployment", "/spec/template/spec/containers/1/resources/limits/cpu", 0, false},
		// Another document's field is not this one's.
		{"Deployment", "/data/name", 0, false},
	} {
		t.Run(tt.kind+tt.ptr, func(t *testing.T) {
			toks := strings.Split(strings.TrimPrefix(tt.ptr, "/"), "/")
			line, ok := structural(f, "templates/app.yaml", tt.kind, toks)
			NewWithT(t).Expect([]any{line, ok}).To(Equal([]any{tt.line, tt.ok}))
		})
	}
}
