package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFaultProxy walks the proxy through its faults in front of a
// server that counts what reaches it.
func TestFaultProxy(t *testing.T) {
	g := NewWithT(t)
	var reached atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	p, err := NewFaultProxy(backend.URL)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = p.Close() })
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string, error) {
		resp, err := c.Get(p.URL() + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close() //nolint:errcheck // read-only
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), err
	}

	code, _, err := get("/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(reached.Load()).To(BeEquivalentTo(1))

	p.Fail(http.StatusInternalServerError, http.StatusTooManyRequests)
	code, _, _ = get("/b")
	g.Expect(code).To(Equal(http.StatusInternalServerError))
	code, retry, _ := get("/b")
	g.Expect(code).To(Equal(http.StatusTooManyRequests))
	g.Expect(retry).To(Equal("1"))

	p.Down()
	_, _, err = get("/c")
	g.Expect(err).To(HaveOccurred(), "a server that is down drops the connection")
	p.Up()
	g.Expect(reached.Load()).To(BeEquivalentTo(1), "nothing reached the server while it failed")

	// After: the server has answered, the client never hears it.
	trap := p.Trap(func(r *http.Request) bool { return r.URL.Path == "/push" }, TrapAfter)
	done := make(chan error, 1)
	go func() { _, _, err := get("/push"); done <- err }()
	<-trap.Caught()
	g.Expect(trap.What).To(Equal("GET /push"))
	g.Expect(reached.Load()).To(BeEquivalentTo(2))
	trap.Release()
	g.Expect(<-done).To(HaveOccurred())

	// Before: the server never sees it.
	trap = p.Trap(func(r *http.Request) bool { return r.URL.Path == "/push" }, TrapBefore)
	go func() { _, _, err := get("/push"); done <- err }()
	<-trap.Caught()
	g.Expect(reached.Load()).To(BeEquivalentTo(2))
	trap.Release()
	g.Expect(<-done).To(HaveOccurred())

	unused := p.Trap(func(*http.Request) bool { return false }, TrapBefore)
	g.Expect(p.Untrap(unused)).To(BeTrue())
	g.Expect(p.Untrap(unused)).To(BeFalse())
	g.Expect(p.Served()).To(HaveKeyWithValue("trapped", 2))
}
