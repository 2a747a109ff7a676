package audit

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// TestSendersAreToldApartByToken (issue 24 §2): a spoke's apiserver sends
// its own token; its writes reach the stores registered for that token,
// and neither the hub's store nor another spoke's.
func TestSendersAreToldApartByToken(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("hub-token")
	h.Senders = NewSenders()
	east1, east2, west := newTestStore(), newTestStore(), newTestStore()
	releaseEast1 := h.Senders.Register("east-token", east1)
	h.Senders.Register("east-token", east2)
	h.Senders.Register("west-token", west)

	g.Expect(post(h, batch, "east-token").Code).To(Equal(http.StatusOK))
	g.Expect(east1.Len()).To(Equal(2), "both engines of the east cluster see its writes")
	g.Expect(east2.Len()).To(Equal(2))
	g.Expect(west.Len()).To(Equal(0), "another cluster's token")
	g.Expect(h.Store.Len()).To(Equal(0), "a spoke's writes are not the hub's")

	g.Expect(post(h, batch, "hub-token").Code).To(Equal(http.StatusOK))
	g.Expect(h.Store.Len()).To(Equal(2))
	g.Expect(west.Len()).To(Equal(0))

	// A released store hears no more; a token nobody sends is refused as
	// any wrong token is.
	releaseEast1()
	releaseEast1()
	g.Expect(post(h, batch, "east-token").Code).To(Equal(http.StatusOK))
	g.Expect(east2.Len()).To(Equal(2), "the same writes again")
	g.Expect(post(h, batch, "north-token").Code).To(Equal(http.StatusUnauthorized))
	g.Expect(post(h, batch, "").Code).To(Equal(http.StatusUnauthorized))
}

// TestSenderTokenWithOpenHub: with no hub token, a request without a
// spoke's token is the hub's, and one with it is still the spoke's.
func TestSenderTokenWithOpenHub(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("")
	h.Senders = NewSenders()
	spoke := newTestStore()
	h.Senders.Register("spoke-token", spoke)
	g.Expect(post(h, batch, "spoke-token").Code).To(Equal(http.StatusOK))
	g.Expect(post(h, batch, "").Code).To(Equal(http.StatusOK))
	g.Expect(spoke.Len()).To(Equal(2))
	g.Expect(h.Store.Len()).To(Equal(2))
}
