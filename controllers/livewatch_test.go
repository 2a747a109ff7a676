package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestWatcherNamespaces(t *testing.T) {
	tests := []struct {
		name string
		opts WatcherOptions
		want []string
	}{
		{"the whole cluster", WatcherOptions{}, nil},
		{"--watch-all-namespaces=false", WatcherOptions{Namespace: "reflux-system"}, []string{"reflux-system"}},
		{"--watch-namespaces", WatcherOptions{Namespaces: []string{"tenant-a", "tenant-b"}}, []string{"tenant-a", "tenant-b"}},
		{"both, without repeats or empties", WatcherOptions{Namespace: "tenant-a", Namespaces: []string{"", "tenant-a", "tenant-b"}},
			[]string{"tenant-a", "tenant-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.opts.namespaces()).To(Equal(tt.want))
		})
	}
}
