// Package charttest writes the Helm charts the benchmarks of reverse/chart
// and e2e/helmlive measure: a chart shaped like common ones, with about
// 300 values keys at its default size.
package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Components × 15 keys each: about 300 values keys (issue 19 §8). Every
// fifth component is disabled, as charts ship optional parts off.
const Components = 20

// Write writes a chart named bench of n components into dir, each a
// Deployment, Service, ConfigMap and Secret behind its own enabled flag.
func Write(dir string, n int) error {
	var values strings.Builder
	values.WriteString("components:\n")
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: bench\nversion: 1.0.0\nappVersion: \"1.0.0\"\n",
		"templates/_helpers.tpl": `{{- define "bench.image" -}}
{{ .repository }}:{{ .tag | default "latest" }}
{{- end }}
`,
	}
	for i := range n {
		name := Name(i)
		fmt.Fprintf(&values, `  %[1]s:
    enabled: %[2]t
    replicas: %[3]d
    image:
      repository: registry.example.com/team/%[1]s
      tag: "1.%[3]d.0"
      pullPolicy: IfNotPresent
    port: %[4]d
    serviceType: ClusterIP
    resources:
      limits: {cpu: 500m, memory: 256Mi}
      requests: {cpu: 100m, memory: 128Mi}
    env:
      - {name: LOG_LEVEL, value: info}
    config:
      greeting: hello from %[1]s
      password: secret-%[1]s
`, name, Enabled(i), i%4+1, 8000+i)
		files["templates/"+name+".yaml"] = strings.ReplaceAll(template, "NAME", name)
	}
	files["values.yaml"] = values.String()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing chart file %s: %w", name, err)
		}
	}
	return nil
}

// Enabled reports whether component i of a chart Write wrote is on.
func Enabled(i int) bool { return i%5 != 4 }

// Name is component i's name, which its objects' names end with.
func Name(i int) string { return fmt.Sprintf("c%02d", i) }

const template = `{{- with .Values.components.NAME }}
{{- if .enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-NAME
spec:
  replicas: {{ .replicas }}
  selector:
    matchLabels: {app: NAME}
  template:
    metadata:
      labels: {app: NAME}
    spec:
      containers:
        - name: NAME
          image: {{ include "bench.image" .image | quote }}
          imagePullPolicy: {{ .image.pullPolicy }}
          ports:
            - containerPort: {{ .port }}
          env:
            {{- toYaml .env | nindent 12 }}
          resources:
            {{- toYaml .resources | nindent 12 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $.Release.Name }}-NAME
spec:
  type: {{ .serviceType }}
  ports:
    - port: {{ .port }}
      targetPort: {{ .port }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-NAME
data:
  greeting: {{ .config.greeting | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ $.Release.Name }}-NAME
data:
  password: {{ .config.password | b64enc }}
{{- end }}
{{- end }}
`
