package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSpliceValue(t *testing.T) {
	for _, c := range []struct {
		name           string
		rendered, live string
		current, want  any
		ok             bool
	}{
		{"an image's tag", "registry/app:1.0.0", "registry/app:0.9.0", "1.0.0", "0.9.0", true},
		{"a repository", "registry/app:1.0.0", "mirror/app:1.0.0", "registry/app", "mirror/app", true},
		{"a number in a URL", "http://db:5432/app", "http://db:6432/app", float64(5432), int64(6432), true},
		{"a fraction", "ratio=0.5", "ratio=0.75", 0.5, 0.75, true},
		{"a bool", "debug=false", "debug=true", false, true, true},
		{"not a bool live", "debug=false", "debug=yes", false, nil, false},
		{"not a number live", "port 80", "port http", int64(80), nil, false},
		{"the value twice", "1.0.0-1.0.0", "1.0.0-0.9.0", "1.0.0", nil, false},
		{"not shown", "registry/app:latest", "registry/app:0.9.0", "1.0.0", nil, false},
		{"changed elsewhere too", "registry/app:1.0.0", "mirror/app:0.9.0", "1.0.0", nil, false},
		{"unchanged", "registry/app:1.0.0", "registry/app:1.0.0", "1.0.0", nil, false},
		{"emptied", "registry/app:1.0.0", "registry/app:", "1.0.0", nil, false},
		{"an empty key", "registry/app:", "registry/app:1", "", nil, false},
		{"a map is not spliced", "x", "y", map[string]any{}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			v, ok := SpliceValue(c.rendered, c.live, c.current)
			g.Expect(ok).To(Equal(c.ok))
			if !c.ok {
				g.Expect(v).To(BeNil())
				return
			}
			g.Expect(v).To(Equal(c.want))
		})
	}
}

func TestSpliced(t *testing.T) {
	g := NewWithT(t)
	repo := Key{Path: "image.repository", Value: "registry/app"}
	tag := Key{Path: "image.tag", Value: "1.0.0"}
	k, v, ok := Spliced("registry/app:1.0.0", "registry/app:0.9.0", []Key{repo, tag})
	g.Expect(ok).To(BeTrue())
	g.Expect(k.Path).To(Equal("image.tag"))
	g.Expect(v).To(Equal("0.9.0"))

	_, _, ok = Spliced("registry/app:1.0.0", "mirror/app:0.9.0", []Key{repo, tag})
	g.Expect(ok).To(BeFalse(), "two parts changed")
	_, _, ok = Spliced("a-a", "b-a", []Key{{Path: "x", Value: "a-"}, {Path: "y", Value: "a-a"}})
	g.Expect(ok).To(BeFalse(), "the whole value is one key's too: ambiguous")
}

// TestSplicedImageRendersAsTheLiveEdit: the webapp chart builds its image
// from repository and tag through include; the spliced tag, set, renders
// exactly the rolled-back image.
func TestSplicedImageRendersAsTheLiveEdit(t *testing.T) {
	g := NewWithT(t)
	values := releaseValues(t)
	a := analyze(t, "webapp", values)
	res, err := a.Find(deployment, container+"/image")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kind).To(Equal(KindComputed))
	rendered := res.Value.(string)
	live := rendered[:len(rendered)-len("1.27.0")] + "1.26.3"
	k, v, ok := Spliced(rendered, live, res.Keys)
	g.Expect(ok).To(BeTrue(), "%s → %s by %v", rendered, live, res.Keys)
	g.Expect(k.Path).To(Equal("image.tag"))
	g.Expect(VerifyValues(loadChart(t, "webapp"), values, testRelease, []Setting{{k.Path, v}},
		[]Wanted{{deployment, container + "/image", live}})).To(Succeed())
}
