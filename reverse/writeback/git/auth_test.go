package git

import (
	"testing"

	fluxgit "github.com/fluxcd/pkg/git"
	. "github.com/onsi/gomega"
)

func TestNewAuth(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		data    map[string][]byte
		check   func(g *WithT, o *AuthOptions)
		wantErr bool
	}{
		{name: "basic", url: "https://example.com/r.git",
			data: map[string][]byte{"username": []byte("u"), "password": []byte("p")},
			check: func(g *WithT, o *AuthOptions) {
				g.Expect(o.Transport).To(Equal(fluxgit.HTTPS))
				g.Expect(o.Username).To(Equal("u"))
				g.Expect(o.Password).To(Equal("p"))
			}},
		{name: "bearer", url: "https://example.com/r.git",
			data:  map[string][]byte{"bearerToken": []byte("t")},
			check: func(g *WithT, o *AuthOptions) { g.Expect(o.BearerToken).To(Equal("t")) }},
		{name: "anonymous", url: "https://example.com/r.git",
			check: func(g *WithT, o *AuthOptions) { g.Expect(o.Username).To(BeEmpty()) }},
		{name: "ssh", url: "ssh://git@example.com/r.git",
			data: map[string][]byte{"identity": []byte("k"), "known_hosts": []byte("h")},
			check: func(g *WithT, o *AuthOptions) {
				g.Expect(o.Transport).To(Equal(fluxgit.SSH))
				g.Expect(o.Username).To(Equal("git"))
			}},
		{name: "ssh without known_hosts", url: "ssh://git@example.com/r.git",
			data: map[string][]byte{"identity": []byte("k")}, wantErr: true},
		{name: "password without username", url: "https://example.com/r.git",
			data: map[string][]byte{"password": []byte("p")}, wantErr: true},
		{name: "bad url", url: "://", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := NewAuth(tt.url, tt.data)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			tt.check(g, o)
		})
	}
}
