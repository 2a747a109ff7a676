package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchComponents × 15 keys each: about 300 values keys (issue 19 §8).
// Every fifth component is disabled, as charts ship optional parts off.
const benchComponents = 20

// writeBenchChart writes a chart of n components, each a Deployment,
// Service, ConfigMap and Secret behind its own enabled flag, and returns
// its directory.
func writeBenchChart(b testing.TB, n int) string {
	b.Helper()
	dir := b.TempDir()
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
		name := fmt.Sprintf("c%02d", i)
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
`, name, i%5 != 4, i%4+1, 8000+i)
		files["templates/"+name+".yaml"] = strings.ReplaceAll(benchTemplate, "NAME", name)
	}
	files["values.yaml"] = values.String()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

const benchTemplate = `{{- with .Values.components.NAME }}
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

// benchValues are a release's own: a few keys of a few components.
func benchValues() map[string]any {
	return map[string]any{"components": map[string]any{
		"c01": map[string]any{"replicas": 3},
		"c07": map[string]any{"image": map[string]any{"tag": "2.0.0"}, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}},
	}}
}

func BenchmarkMap(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	var renders, fields, keys int
	for b.Loop() {
		a, err := Analyze(ch, benchValues(), testRelease)
		if err != nil {
			b.Fatal(err)
		}
		m := a.Map()
		renders, fields, keys = m.Renders(), m.Len(), len(a.leaves)
	}
	b.ReportMetric(float64(renders), "renders/op")
	b.ReportMetric(float64(fields), "fields/op")
	b.ReportMetric(float64(keys), "keys")
}

func BenchmarkFind(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	obj := ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "shop-c07"}
	var renders int
	for b.Loop() {
		a, err := Analyze(ch, benchValues(), testRelease)
		if err != nil {
			b.Fatal(err)
		}
		res, err := a.Find(obj, "/spec/template/spec/containers/0/resources/limits/memory")
		if err != nil {
			b.Fatal(err)
		}
		if res.Kind != KindValues {
			b.Fatalf("kind %s", res.Kind)
		}
		renders = a.Renders()
	}
	b.ReportMetric(float64(renders), "renders/op")
}

func BenchmarkRender(b *testing.B) {
	ch, err := Load(writeBenchChart(b, benchComponents))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Render(ch, benchValues(), testRelease); err != nil {
			b.Fatal(err)
		}
	}
}
