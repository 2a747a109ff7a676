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

func TestImageMatches(t *testing.T) {
	tests := []struct {
		image, name string
		want        bool
	}{
		{"nginx", "nginx", true},
		{"nginx:1.25", "nginx", true},
		{"nginx@sha256:abc", "nginx", true},
		{"registry:5000/team/app:v1", "registry:5000/team/app", true},
		{"nginx-unprivileged:1.25", "nginx", false},
		{"library/nginx:1.25", "nginx", false},
		{"nginx:1.25", "library/nginx", false},
	}
	for _, tt := range tests {
		t.Run(tt.image+" "+tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ImageMatches(tt.image, tt.name)).To(Equal(tt.want))
		})
	}
}

func TestSetImage(t *testing.T) {
	tests := []struct {
		image, newName, newTag, digest, want string
	}{
		{"nginx:1.25", "", "1.27", "", "nginx:1.27"},
		{"nginx:1.25@sha256:old", "", "1.27", "", "nginx:1.27"},
		{"nginx:1.25", "", "", "sha256:new", "nginx@sha256:new"},
		{"nginx:1.25", "", "1.27", "sha256:new", "nginx:1.27@sha256:new"},
		{"nginx:1.25", "ghcr.io/nginx", "", "", "ghcr.io/nginx:1.25"},
		{"nginx", "", "", "", "nginx"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			NewWithT(t).Expect(SetImage(tt.image, tt.newName, tt.newTag, tt.digest)).To(Equal(tt.want))
		})
	}
}
