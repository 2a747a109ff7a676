package controllers

import (
	"testing"

	"github.com/reflux-dev/reflux/internal/audit"
)

func TestIsKustomizeController(t *testing.T) {
	tests := []struct {
		name string
		w    audit.Write
		want bool
	}{
		{"Flux's ServiceAccount", audit.Write{User: "system:serviceaccount:flux-system:kustomize-controller"}, true},
		{"Flux installed elsewhere", audit.Write{User: "system:serviceaccount:gitops:kustomize-controller"}, true},
		{"impersonating a tenant, Flux's client", audit.Write{User: "system:serviceaccount:team-a:deployer",
			UserAgent: "kustomize-controller/v0.0.0 (linux/amd64) kubernetes/$Format"}, true},
		{"a person", audit.Write{User: "alice@example.com", UserAgent: "kubectl/v1.36.4 (linux/amd64) kubernetes/abc"}, false},
		{"a user named like the controller", audit.Write{User: "kustomize-controller"}, false},
		{"another ServiceAccount", audit.Write{User: "system:serviceaccount:flux-system:helm-controller"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isKustomizeController(tt.w); got != tt.want {
				t.Errorf("isKustomizeController(%+v) = %v, want %v", tt.w, got, tt.want)
			}
		})
	}
}
