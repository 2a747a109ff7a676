package chart

import (
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

var (
	configMap = ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "shop-webapp-config"}
	secret    = ObjectKey{APIVersion: "v1", Kind: "Secret", Namespace: "prod", Name: "shop-webapp"}
	service   = ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "prod", Name: "shop-webapp"}
	role      = ObjectKey{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "shop-webapp-reader"}
)

const container = "/spec/template/spec/containers/0"

// findCase is one field of the webapp release and where it must be found
// to come from.
type findCase struct {
	name       string
	obj        ObjectKey
	ptr        string
	kind       Kind
	keys       []string
	conditions []string
	file       string
	line       int
}

var findCases = []findCase{
	{"kubectl scale: a count the release sets", deployment, "/spec/replicas",
		KindValues, []string{"replicaCount"}, []string{"autoscaling.enabled"}, "templates/deployment.yaml", 9},
	{"a quantity through toYaml .Values.resources", deployment, container + "/resources/limits/memory",
		KindValues, []string{"resources.limits.memory"}, nil, "templates/deployment.yaml", 35},
	{"a quantity only the chart sets", deployment, container + "/resources/limits/cpu",
		KindChartDefault, []string{"resources.limits.cpu"}, nil, "templates/deployment.yaml", 35},
	{"an element of a list from values", deployment, container + "/env/1/value",
		KindValues, []string{"env[1].value"}, nil, "templates/deployment.yaml", 29},
	{"repository:tag through include", deployment, container + "/image",
		KindComputed, []string{"image.repository", "image.tag"}, nil, "templates/_helpers.tpl", 22},
	{"a value passed through a named template", deployment, container + "/livenessProbe/httpGet/path",
		KindChartDefault, []string{"probe.path"}, nil, "templates/_helpers.tpl", 26},
	{"a hard-coded port", deployment, container + "/ports/0/containerPort",
		KindTemplateLiteral, nil, nil, "templates/deployment.yaml", 26},
	{"a hard-coded count", deployment, "/spec/revisionHistoryLimit",
		KindTemplateLiteral, nil, nil, "templates/deployment.yaml", 11},
	{"a sidecar behind a condition", deployment, "/spec/template/spec/containers/1/image",
		KindChartDefault, []string{"sidecar.image"}, []string{"sidecar.enabled"}, "templates/deployment.yaml", 38},
	{"a ConfigMap entry, quoted", configMap, "/data/greeting",
		KindChartDefault, []string{"config.greeting"}, nil, "templates/configmap.yaml", 7},
	{"a ConfigMap entry through tpl", configMap, "/data/timeout",
		KindChartDefault, []string{"config.timeout"}, nil, "templates/configmap.yaml", 8},
	{"a ConfigMap entry the template upper-cases", configMap, "/data/mode",
		KindComputed, []string{"config.mode"}, nil, "templates/configmap.yaml", 9},
	{"a Secret entry through b64enc", secret, "/data/password",
		KindComputed, []string{"secret.password"}, nil, "templates/secret.yaml", 7},
	{"a port number", service, "/spec/ports/0/port",
		KindChartDefault, []string{"service.port"}, nil, "templates/service.yaml", 10},
	{"a literal of a conditional object", role, "/rules/0/verbs/1",
		KindTemplateLiteral, nil, []string{"rbac.create"}, "templates/rbac.yaml", 9},
}

func TestFind(t *testing.T) {
	for _, tt := range findCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := analyze(t, "webapp", releaseValues(t))
			res, err := a.Find(tt.obj, tt.ptr)
			g.Expect(err).NotTo(HaveOccurred())
			expectResult(g, res, tt)
			// Not a render per key: the candidates alone, and groups for
			// the keys that are not.
			g.Expect(a.Renders()).To(BeNumerically("<", len(a.leaves)), "renders for %d keys", len(a.leaves))
		})
	}
}

func expectResult(g Gomega, res Result, tt findCase) {
	g.Expect(res.Object).To(Equal(tt.obj))
	g.Expect(res.Pointer).To(Equal(tt.ptr))
	g.Expect(res.Kind).To(Equal(tt.kind))
	g.Expect(paths(res.Keys)).To(Equal(nonNil(tt.keys)))
	g.Expect(paths(res.Conditions)).To(Equal(nonNil(tt.conditions)))
	g.Expect(res.Template).To(Equal(Location{File: tt.file, Line: tt.line}))
	g.Expect(res.Unprobed).To(BeEmpty())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestFindReportsTheKeyToEdit(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", releaseValues(t))

	res, err := a.Find(deployment, container+"/env/1/value")
	g.Expect(err).NotTo(HaveOccurred())
	k, ok := res.Key()
	g.Expect(ok).To(BeTrue())
	g.Expect(k).To(Equal(Key{Path: "env[1].value", Pointer: "/env/1/value", InUserValues: true, Value: "eu-west-1",
		Template: Location{File: "templates/deployment.yaml", Line: 29}}))
	g.Expect(res.Value).To(Equal("eu-west-1"))

	res, err = a.Find(deployment, container+"/imagePullPolicy")
	g.Expect(err).NotTo(HaveOccurred())
	k, ok = res.Key()
	g.Expect(ok).To(BeTrue())
	g.Expect(k.Path).To(Equal("image.pullPolicy"))
	g.Expect(k.InUserValues).To(BeFalse(), "the release would have to add it")

	res, err = a.Find(deployment, container+"/image")
	g.Expect(err).NotTo(HaveOccurred())
	_, ok = res.Key()
	g.Expect(ok).To(BeFalse(), "a computed field has no one key")
}

func TestFindWithoutReleaseValues(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", nil)
	res, err := a.Find(deployment, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kind).To(Equal(KindChartDefault))
	g.Expect(paths(res.Keys)).To(Equal([]string{"replicaCount"}))
	g.Expect(res.Value).To(Equal(int64(1)))
}

func TestFindReusesProbes(t *testing.T) {
	g := NewWithT(t)
	a := analyze(t, "webapp", releaseValues(t))
	first, err := a.Find(deployment, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	n := a.Renders()
	again, err := a.Find(deployment, "/spec/replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first))
	g.Expect(a.Renders()).To(Equal(n), "the same field renders nothing new")
}

func TestFindErrors(t *testing.T) {
	a := analyze(t, "webapp", releaseValues(t))
	tests := []struct {
		name string
		obj  ObjectKey
		ptr  string
		want error
	}{
		{"an object the chart does not render", ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "prod", Name: "other"}, "/spec/type", ErrObjectNotFound},
		{"the right name in another namespace", ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "dev", Name: "shop-webapp"}, "/spec/replicas", ErrObjectNotFound},
		{"a field that is not a leaf", deployment, "/spec/template", ErrFieldNotFound},
		{"a field that is not there", deployment, "/spec/paused", ErrFieldNotFound},
		{"not a pointer", deployment, "spec/replicas", ErrFieldNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := a.Find(tt.obj, tt.ptr)
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}

func TestFindInPackagedChart(t *testing.T) {
	g := NewWithT(t)
	tgz, err := chartutil.Save(loadChart(t, "webapp"), t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := Load(tgz)
	g.Expect(err).NotTo(HaveOccurred())
	a, err := Analyze(ch, releaseValues(t), testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	for _, tt := range findCases[:2] {
		res, err := a.Find(tt.obj, tt.ptr)
		g.Expect(err).NotTo(HaveOccurred())
		expectResult(g, res, tt)
	}
}

func TestFindUnprobedKey(t *testing.T) {
	g := NewWithT(t)
	// The strict chart fails for any mode but fast or safe, so no
	// sentinel can tell whether mode sets a field.
	a := analyze(t, "strict", nil)
	speed, err := a.Find(ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "strict"}, "/data/speed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(speed.Kind).To(Equal(KindTemplateLiteral))
	g.Expect(speed.Unprobed).To(Equal([]string{"mode"}))

	size, err := a.Find(ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "strict"}, "/data/size")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size.Kind).To(Equal(KindChartDefault), "a number quoted is still the number")
	g.Expect(paths(size.Keys)).To(Equal([]string{"size"}))
}

func TestFindInDependency(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t, "umbrella")
	a, err := Analyze(ch, map[string]any{"global": map[string]any{"region": "us-east-1"}}, testRelease)
	g.Expect(err).NotTo(HaveOccurred())
	cache := ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "shop-cache"}

	res, err := a.Find(cache, "/data/maxmemory")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kind).To(Equal(KindChartDefault))
	g.Expect(paths(res.Keys)).To(Equal([]string{"cache.maxMemory"}), "the parent's value overrides the dependency's")
	g.Expect(paths(res.Conditions)).To(Equal([]string{"cache.enabled"}), "the dependency's condition")
	g.Expect(res.Template).To(Equal(Location{File: "charts/cache/templates/configmap.yaml", Line: 6}))

	res, err = a.Find(cache, "/data/region")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kind).To(Equal(KindValues))
	g.Expect(paths(res.Keys)).To(Equal([]string{"global.region"}))

	g.Expect(ch.Dependencies()).To(HaveLen(1), "probes that disable the dependency leave the caller's chart alone")
	g.Expect(ch.Metadata.Dependencies[0].Enabled).To(BeFalse())
}

func TestFindConcurrently(t *testing.T) {
	a := analyze(t, "webapp", releaseValues(t))
	results := make([]Result, len(findCases))
	errs := make([]error, len(findCases))
	var wg sync.WaitGroup
	for i, tt := range findCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = a.Find(tt.obj, tt.ptr)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Map()
	}()
	wg.Wait()
	for i, tt := range findCases {
		g := NewWithT(t)
		g.Expect(errs[i]).NotTo(HaveOccurred())
		expectResult(g, results[i], tt)
	}
}
