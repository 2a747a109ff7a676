package chart

import (
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// testSources builds sources from files given as path → lines.
func testSources(files map[string][]string) *sources {
	s := &sources{}
	for path, lines := range files {
		s.files = append(s.files, srcFile{path: path, dir: chartDir(path), lines: lines})
	}
	// The order newSources gives.
	sort.Slice(s.files, func(i, j int) bool { return s.files[i].path < s.files[j].path })
	return s
}

func TestLocateKey(t *testing.T) {
	src := testSources(map[string][]string{
		"templates/deployment.yaml": {
			"kind: Deployment", // 1
			"spec:",            // 2
			"  imagePullPolicy: {{ .Values.image.pullPolicy }}", // 3
			"  {{- with .Values.podSecurity }}",                 // 4
			"  securityContext: {{ toYaml . | nindent 4 }}",     // 5
			"  {{- end }}", // 6
			"  env: {{ toYaml $.Values.env | nindent 4 }}",         // 7
			`  annotations: {{ index .Values "pod-annotations" }}`, // 8
			"  replicas: {{ .Values.replicaCountMax }}",            // 9
			"  replicas: {{ .Values.replicaCount }}",               // 10
		},
		"templates/_helpers.tpl": {
			`{{- define "image" -}}`,                                 // 1
			"{{ .Values.image.repository }}:{{ .Values.image.tag }}", // 2
		},
		"templates/service.yaml": {
			"kind: Service",
			"  port: {{ .Values.service.port }}", // 2
		},
		"charts/db/templates/sts.yaml": {
			"kind: StatefulSet",
			"  size: {{ .Values.size }}",            // 2
			"  region: {{ .Values.global.region }}", // 3
		},
	})
	tests := []struct {
		name     string
		steps    []step
		template string
		want     Location
	}{
		{"the whole key, in the object's template", steps("replicaCount"), "templates/deployment.yaml", Location{"templates/deployment.yaml", 10}},
		{"a key read in a partial", steps("image", "tag"), "templates/deployment.yaml", Location{"templates/_helpers.tpl", 2}},
		{"a prefix read whole, by with", steps("podSecurity", "runAsUser"), "templates/deployment.yaml", Location{"templates/deployment.yaml", 4}},
		{"a list read whole, from $", steps("env", 1, "value"), "templates/deployment.yaml", Location{"templates/deployment.yaml", 7}},
		{"a key in another object's template", steps("service", "port"), "templates/deployment.yaml", Location{"templates/service.yaml", 2}},
		{"a key no dot can write", steps("pod-annotations", "a"), "templates/deployment.yaml", Location{}},
		{"a key nothing reads", steps("ingress", "host"), "templates/deployment.yaml", Location{}},
		{"a dependency's key, as its templates read it", steps("db", "size"), "charts/db/templates/sts.yaml", Location{"charts/db/templates/sts.yaml", 2}},
		{"a global in a dependency", steps("global", "region"), "charts/db/templates/sts.yaml", Location{"charts/db/templates/sts.yaml", 3}},
		{"the parent's templates are not the dependency's", steps("db", "size"), "templates/deployment.yaml", Location{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(src.key(tt.steps, tt.template, "")).To(Equal(tt.want))
		})
	}
}

func TestLocateKeyIgnoresLongerNames(t *testing.T) {
	g := NewWithT(t)
	src := testSources(map[string][]string{"templates/a.yaml": {
		"  policy: {{ .Values.image.pullPolicy }}",
		"  max: {{ .Values.imageMax }}",
	}})
	g.Expect(src.key(steps("image", "tag"), "templates/a.yaml", "")).To(Equal(Location{}),
		".Values.image.pullPolicy reads another key under image, .Values.imageMax another key")
}

func TestLocateFromTheObjectsDocument(t *testing.T) {
	rbac := strings.Split(strings.Join([]string{
		"{{- if .Values.rbac.create }}", // 1
		"apiVersion: rbac.authorization.k8s.io/v1",
		"kind: ClusterRole", // 3
		"metadata:",
		"  name: {{ .Values.name }}", // 5
		"---",
		"apiVersion: rbac.authorization.k8s.io/v1", // 7
		"kind: RoleBinding",                        // 8
		"metadata:",
		"  name: {{ .Values.name }}", // 10
		"roleRef:",
		"  kind: ClusterRole", // 12
		"{{- end }}",
	}, "\n"), "\n")
	src := testSources(map[string][]string{"templates/rbac.yaml": rbac})
	tests := []struct {
		name  string
		kind  string
		ptr   string
		value any
		want  int
	}{
		{"the first object's kind", "ClusterRole", "/kind", "ClusterRole", 3},
		{"the second object's apiVersion, above its kind", "RoleBinding", "/apiVersion", "rbac.authorization.k8s.io/v1", 7},
		{"a field of the second object that the first also holds", "RoleBinding", "/roleRef/kind", "ClusterRole", 12},
		{"a kind the template does not declare reads the file in order", "Role", "/apiVersion", "rbac.authorization.k8s.io/v1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(src.literal("templates/rbac.yaml", tt.kind, tt.ptr, tt.value)).To(Equal(Location{"templates/rbac.yaml", tt.want}))
		})
	}
	g := NewWithT(t)
	g.Expect(src.key(steps("name"), "templates/rbac.yaml", "RoleBinding")).To(Equal(Location{"templates/rbac.yaml", 10}))
	g.Expect(src.key(steps("name"), "templates/rbac.yaml", "ClusterRole")).To(Equal(Location{"templates/rbac.yaml", 5}))
}

func TestLocateLiteral(t *testing.T) {
	src := testSources(map[string][]string{
		"templates/deployment.yaml": {
			"kind: Deployment",
			"  revisionHistoryLimit: 10", // 2
			"  args:",
			"    - --verbose", // 4
			"  labels: {{ include \"labels\" . }}",
		},
		"templates/_helpers.tpl": {
			`{{- define "labels" -}}`,
			"tier: web", // 2
		},
		"templates/other.yaml": {"  team: payments"},
	})
	tests := []struct {
		name  string
		ptr   string
		value any
		want  Location
	}{
		{"a number after its name", "/spec/revisionHistoryLimit", int64(10), Location{"templates/deployment.yaml", 2}},
		{"a list element by its text", "/spec/args/0", "--verbose", Location{"templates/deployment.yaml", 4}},
		{"a literal in a partial", "/metadata/labels/tier", "web", Location{"templates/_helpers.tpl", 2}},
		{"not in another object's template", "/metadata/labels/team", "payments", Location{}},
		{"an empty value is not searched", "/metadata/annotations/x", "", Location{}},
		{"a map is not a literal", "/spec/selector", map[string]any{}, Location{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(src.literal("templates/deployment.yaml", "Deployment", tt.ptr, tt.value)).To(Equal(tt.want))
		})
	}
}

func TestRefNames(t *testing.T) {
	tests := []struct {
		steps []step
		dir   string
		want  []string
	}{
		{steps("image", "tag"), "", []string{"image", "tag"}},
		{steps("env", 0, "value"), "", []string{"env"}},
		{steps("db", "auth", "password"), "charts/db/", []string{"auth", "password"}},
		{steps("db", "cache", "size"), "charts/db/charts/cache/", []string{"size"}},
		{steps("global", "region"), "charts/db/", []string{"global", "region"}},
		{steps("labels", "app.kubernetes.io/name"), "", []string{"labels"}},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(refNames(tt.steps, tt.dir)).To(Equal(tt.want), keyPath(tt.steps))
	}
}

func TestReadOnLine(t *testing.T) {
	g := NewWithT(t)
	src := testSources(map[string][]string{"templates/secret.yaml": {
		"kind: Secret",
		"data:",
		"  password: {{ .config.password | b64enc }}",
		"  user: {{ $.Values.user }}",
	}})
	g.Expect(src.readOnLine("templates/secret.yaml", "/data/password")).To(Equal([]string{"config", "password"}))
	g.Expect(src.readOnLine("templates/secret.yaml", "/data/user")).To(Equal([]string{"Values", "user"}))
	g.Expect(src.readOnLine("templates/secret.yaml", "/data/0")).To(BeEmpty(), "a list element has no line to find")
	g.Expect(src.readOnLine("templates/other.yaml", "/data/password")).To(BeEmpty())
}
