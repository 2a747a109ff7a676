package chart

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestKeyPointer(t *testing.T) {
	for _, c := range []struct {
		path, ptr, err string
	}{
		{path: "replicaCount", ptr: "/replicaCount"},
		{path: "resources.limits.memory", ptr: "/resources/limits/memory"},
		{path: "env[1].value", ptr: "/env/1/value"},
		{path: `podAnnotations["prometheus.io/port"]`, ptr: "/podAnnotations/prometheus.io~1port"},
		{path: `a["x]y"].b[0][2]`, ptr: "/a/x]y/b/0/2"},
		{path: `a["q\"]"]`, ptr: `/a/q"]`},
		{path: "", err: "empty"},
		{path: ".a", err: "starts with a dot"},
		{path: "a..b", err: `bad name ""`},
		{path: "a[x]", err: "bad index [x]"},
		{path: "a[-1]", err: "bad index [-1]"},
		{path: "a[0", err: "unclosed ["},
		{path: `a["b`, err: "unclosed ["},
		{path: "a b", err: `bad name "a b"`},
	} {
		t.Run(c.path, func(t *testing.T) {
			g := NewWithT(t)
			ptr, err := KeyPointer(c.path)
			if c.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(c.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ptr).To(Equal(c.ptr))
		})
	}
}

// TestKeyPathRoundTrips: what keyPath writes, parseKeyPath reads back.
func TestKeyPathRoundTrips(t *testing.T) {
	for _, steps := range [][]step{
		{{name: "replicaCount", index: -1}},
		{{name: "env", index: -1}, {index: 3}, {name: "value", index: -1}},
		{{name: "podAnnotations", index: -1}, {name: "prometheus.io/port", index: -1}},
		{{name: "a", index: -1}, {index: 0}, {index: 1}, {name: `we"ird]`, index: -1}},
		{{name: "0", index: -1}, {name: "x_y-z", index: -1}},
	} {
		path := keyPath(steps)
		got, err := parseKeyPath(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if keyPath(got) != path || keyPointer(got) != keyPointer(steps) {
			t.Fatalf("%s read back as %s (%s)", path, keyPath(got), keyPointer(got))
		}
	}
}

func TestVerifyValues(t *testing.T) {
	ch := loadChart(t, "webapp")
	for _, c := range []struct {
		name string
		set  []Setting
		want []Wanted
		err  error
		says []string
	}{
		{name: "kubectl scale: replicaCount gives the replicas", set: []Setting{{"replicaCount", 5}},
			want: []Wanted{{deployment, "/spec/replicas", int64(5)}}},
		{name: "a quantity through toYaml", set: []Setting{{"resources.limits.memory", "2Gi"}},
			want: []Wanted{{deployment, container + "/resources/limits/memory", "2Gi"}}},
		{name: "a list element", set: []Setting{{"env[1].value", "us-east-1"}},
			want: []Wanted{{deployment, container + "/env/1/value", "us-east-1"}}},
		{name: "a key only the chart's values.yaml held is added", set: []Setting{{"resources.limits.cpu", "2"}},
			want: []Wanted{{deployment, container + "/resources/limits/cpu", "2"}}},
		{name: "two changes at once", set: []Setting{{"replicaCount", 2}, {"env[0].value", "info"}},
			want: []Wanted{{deployment, "/spec/replicas", 2}, {deployment, container + "/env/0/value", "info"}}},
		{name: "a value the field does not take", set: []Setting{{"replicaCount", 5}},
			want: []Wanted{{deployment, "/spec/replicas", 4}}, err: ErrUnverified,
			says: []string{"/spec/replicas changes too (5)", "/spec/replicas renders 5, not 4"}},
		{name: "a key that changes another field", set: []Setting{{"image.tag", "1.28.0"}},
			want: []Wanted{{deployment, "/spec/replicas", 3}}, err: ErrUnverified,
			says: []string{container + "/image changes too"}},
		{name: "a key that renames every object", set: []Setting{{"fullnameOverride", "other"}},
			want: nil, err: ErrUnverified,
			says: []string{deployment.String() + " is no longer rendered", "apps/v1/Deployment/prod/other is rendered too"}},
		{name: "a key that removes a field", set: []Setting{{"sidecar.enabled", false}},
			want: nil, err: ErrUnverified, says: []string{"/spec/template/spec/containers/1/image changes too (absent)"}},
		{name: "a value the chart refuses", set: []Setting{{"image.repository", ""}},
			want: nil, err: ErrRender, says: []string{"with the new values", "image.repository is required"}},
		{name: "a key below a scalar", set: []Setting{{"replicaCount.x", 1}},
			err: ErrUnverified, says: []string{"/spec/replicas changes too (map[x:1])"}},
		{name: "an index past a list's end", set: []Setting{{"env[5].value", "x"}},
			err: ErrValues, says: []string{"setting env[5].value"}},
		{name: "a key that does not parse", set: []Setting{{"a..b", 1}}, says: []string{`values key "a..b"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			err := VerifyValues(ch, releaseValues(t), testRelease, c.set, c.want)
			if c.says == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			if c.err != nil {
				g.Expect(errors.Is(err, c.err)).To(BeTrue(), err.Error())
			}
			for _, s := range c.says {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}

// TestVerifyValuesLeavesTheValuesAlone: the caller's values are the
// release's, shared with its analysis.
func TestVerifyValuesLeavesTheValuesAlone(t *testing.T) {
	g := NewWithT(t)
	values := releaseValues(t)
	g.Expect(VerifyValues(loadChart(t, "webapp"), values, testRelease, []Setting{{"replicaCount", 7}},
		[]Wanted{{deployment, "/spec/replicas", 7}})).To(Succeed())
	g.Expect(values["replicaCount"]).To(BeEquivalentTo(3))
}
