package v1alpha1

import (
	"maps"
	"testing"
	"time"
)

func TestHoldAnnotations(t *testing.T) {
	since := time.Date(2026, 12, 5, 2, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		helm bool
		want map[string]string
	}{
		{"a Kustomization's object: kustomize-controller's key", false, map[string]string{ReconcileAnnotation: ReconcileDisabled,
			HeldByAnnotation: "rec", HeldSinceAnnotation: "2026-12-05T01:00:00Z"}},
		{"a Helm release's object: helm-controller's key", true, map[string]string{HelmDriftDetectionAnnotation: HelmDriftDetectionDisabled,
			HeldByAnnotation: "rec", HeldSinceAnnotation: "2026-12-05T01:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HoldAnnotations("rec", since, tt.helm)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("HoldAnnotations = %v, want %v", got, tt.want)
			}
			if by, held := HeldBy(got); !held || by != "rec" {
				t.Fatalf("HeldBy(%v) = %q, %v; want rec, true", got, by, held)
			}
		})
	}
}

func TestHeldBy(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		by          string
		held        bool
	}{
		{"none", nil, "", false},
		{"kustomize-controller's key alone is anyone's", map[string]string{ReconcileAnnotation: ReconcileDisabled}, "", false},
		{"helm-controller's key alone is anyone's", map[string]string{HelmDriftDetectionAnnotation: HelmDriftDetectionDisabled}, "", false},
		{"held-by without a key holds nothing", map[string]string{HeldByAnnotation: "rec"}, "rec", false},
		{"another value of the key holds nothing", map[string]string{HelmDriftDetectionAnnotation: "enabled", HeldByAnnotation: "rec"},
			"rec", false},
		{"kustomize-controller's", map[string]string{ReconcileAnnotation: ReconcileDisabled, HeldByAnnotation: "rec"}, "rec", true},
		{"helm-controller's", map[string]string{HelmDriftDetectionAnnotation: HelmDriftDetectionDisabled, HeldByAnnotation: "rec"}, "rec", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			by, held := HeldBy(tt.annotations)
			if by != tt.by || held != tt.held {
				t.Fatalf("HeldBy = %q, %v; want %q, %v", by, held, tt.by, tt.held)
			}
		})
	}
}
