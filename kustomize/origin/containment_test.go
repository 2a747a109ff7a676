package origin

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestMergeIntoWhatTheModelLacks: a generator that merges into an object
// the model does not have (kustomize found it, so an unmodelled construct
// made it) leaves the other objects as they were instead of failing the
// whole model (issue 21 §2).
func TestMergeIntoWhatTheModelLacks(t *testing.T) {
	g := NewWithT(t)
	docs, err := parseDocs([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  A: \"1\"\n"))
	g.Expect(err).NotTo(HaveOccurred())
	n, err := fromYAML(docs[0], "r.yaml", KindResource, "", identityPos)
	g.Expect(err).NotTo(HaveOccurred())
	other := newObject(n)
	docs, err = parseDocs([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  LEVEL: debug\n"))
	g.Expect(err).NotTo(HaveOccurred())
	n, err = fromYAML(docs[0], "kustomization.yaml", KindGeneratorLiteral, "", identityPos)
	g.Expect(err).NotTo(HaveOccurred())
	generated := newObject(n)

	for _, behavior := range []string{"merge", "replace"} {
		objs, err := mergeGenerated([]*object{other}, generated, genSpec{via: "configMapGenerator[0]", name: "settings", behavior: behavior})
		g.Expect(err).NotTo(HaveOccurred(), behavior)
		g.Expect(objs).To(ConsistOf(other), behavior)
		g.Expect(other.root.get("data").keys).To(Equal([]string{"A"}), behavior)
	}
}
