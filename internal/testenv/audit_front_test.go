package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// TestAuditFrontForwardsToTheRoutedReceiver: the held address refuses
// nothing it cannot deliver, forwards to the receiver routed to it, and
// to a new one after a reroute, as a restarted reflux listens elsewhere.
func TestAuditFrontForwardsToTheRoutedReceiver(t *testing.T) {
	g := NewWithT(t)
	f, err := listenAuditFront()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(f.close()).To(Succeed()) })
	get := func() (string, error) {
		// A fresh connection each time: the route applies to those
		// accepted after it.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + f.addr() + "/audit")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	_, err = get()
	g.Expect(err).To(HaveOccurred(), "nothing routed: the connection ends unanswered")

	for _, name := range []string{"first", "second"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, name)
		}))
		f.route(srv.Listener.Addr().String())
		g.Expect(get()).To(Equal(name))
		srv.Close()
	}
	_, err = get()
	g.Expect(err).To(HaveOccurred(), "the routed receiver is gone")
}
