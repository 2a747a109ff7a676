package kustomize

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSplitImage(t *testing.T) {
	tests := []struct{ ref, name, tag, digest string }{
		{"nginx", "nginx", "", ""},
		{"nginx:1.25", "nginx", "1.25", ""},
		{"registry:5000/team/app:v1", "registry:5000/team/app", "v1", ""},
		{"ghcr.io/app@sha256:abc", "ghcr.io/app", "", "sha256:abc"},
		{"ghcr.io/app:v2@sha256:abc", "ghcr.io/app", "v2", "sha256:abc"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			g := NewWithT(t)
			name, tag, digest := SplitImage(tt.ref)
			g.Expect([]string{name, tag, digest}).To(Equal([]string{tt.name, tt.tag, tt.digest}))
		})
	}
}
