package gogit

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/git"
)

func TestRedact(t *testing.T) {
	g := NewWithT(t)
	g.Expect(redact("https://u:secret@example.com/r.git")).To(Equal("https://u:xxxxx@example.com/r.git"))
	g.Expect(redact("ssh://git@example.com/r.git")).To(Equal("ssh://git@example.com/r.git"))
	g.Expect(redact("://")).ToNot(ContainSubstring("/"))
}

func TestRemoteAuth(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		opts     *git.AuthOptions
		insecure bool
		wantErr  error
		wantNil  bool
	}{
		{name: "anonymous", url: "https://example.com/r.git", wantNil: true},
		{name: "basic over https", url: "https://example.com/r.git", opts: &git.AuthOptions{Username: "u", Password: "p"}},
		{name: "token over https", url: "https://example.com/r.git", opts: &git.AuthOptions{BearerToken: "t"}},
		{name: "basic over http refused", url: "http://example.com/r.git", opts: &git.AuthOptions{Username: "u", Password: "p"}, wantErr: git.ErrInsecureTransport},
		{name: "token over http refused", url: "http://example.com/r.git", opts: &git.AuthOptions{BearerToken: "t"}, wantErr: git.ErrInsecureTransport},
		{name: "basic over http allowed", url: "http://example.com/r.git", opts: &git.AuthOptions{Username: "u"}, insecure: true},
		{name: "ssh bad identity", url: "ssh://git@example.com/r.git", opts: &git.AuthOptions{Username: "git", Identity: []byte("x"), KnownHosts: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ra, err := newRemoteAuth(tt.url, tt.opts, tt.insecure)
			switch {
			case tt.wantErr != nil:
				g.Expect(err).To(MatchError(tt.wantErr))
			case tt.name == "ssh bad identity":
				g.Expect(err).To(HaveOccurred())
			case tt.wantNil:
				g.Expect(err).ToNot(HaveOccurred())
				g.Expect(ra.method).To(BeNil())
			default:
				g.Expect(err).ToNot(HaveOccurred())
				g.Expect(ra.method).ToNot(BeNil())
			}
		})
	}
}
