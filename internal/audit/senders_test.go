package audit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

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

	// A released store hears no more; a token no store is registered for
	// is kept for one (TestEarlyWritesGoToTheFirstStore), and no token at
	// all is refused.
	releaseEast1()
	releaseEast1()
	g.Expect(post(h, batch, "east-token").Code).To(Equal(http.StatusOK))
	g.Expect(east2.Len()).To(Equal(2), "the same writes again")
	g.Expect(post(h, batch, "north-token").Code).To(Equal(http.StatusAccepted))
	g.Expect(h.Store.Len()).To(Equal(2), "a spoke's writes are not the hub's, however early")
	g.Expect(post(h, batch, "").Code).To(Equal(http.StatusUnauthorized))
}

// TestEarlyWritesGoToTheFirstStore (issue 24 §2): a spoke's apiserver
// sends before reflux connects to it; those writes are kept, and the
// first store registered for its token gets them, whatever its Keep says
// yet.
// A batch that does not decode is refused, as any is.
func TestEarlyWritesGoToTheFirstStore(t *testing.T) {
	g := NewWithT(t)
	h := newTestHandler("hub-token")
	h.Senders = NewSenders()
	g.Expect(post(h, batch, "early-token").Code).To(Equal(http.StatusAccepted))
	g.Expect(post(h, "{", "early-token").Code).To(Equal(http.StatusBadRequest))
	g.Expect(h.Store.Len()).To(Equal(0))

	first, second := newTestStore(), newTestStore()
	// An engine that watches nothing yet: what was sent before is kept
	// all the same, for the watches it is about to start.
	first.Keep(func(ObjectKey) bool { return false })
	h.Senders.Register("early-token", first)
	g.Expect(first.Len()).To(Equal(2), "the batch's Deployment and ConfigMap")
	h.Senders.Register("early-token", second)
	g.Expect(second.Len()).To(Equal(0), "claimed already")
	g.Expect(post(h, batch, "early-token").Code).To(Equal(http.StatusOK), "registered now")
	g.Expect(second.Len()).To(Equal(2))
}

// TestEarlyWritesAreBounded: the writes of unclaimed tokens are bounded in
// tokens, writes per token and time, and what goes is said.
func TestEarlyWritesAreBounded(t *testing.T) {
	g := NewWithT(t)
	s := NewSenders()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	write := func(i int) keyedWrite {
		return keyedWrite{key: ObjectKey{Resource: "configmaps", Namespace: "a", Name: fmt.Sprint(i)},
			write: Write{User: "alice", Time: now}}
	}
	_, fresh, dropped := s.hold("t-0", []keyedWrite{write(0)}, now)
	g.Expect(fresh).To(BeTrue())
	g.Expect(dropped).To(Equal(Dropped{}))
	_, fresh, _ = s.hold("t-0", []keyedWrite{write(1)}, now)
	g.Expect(fresh).To(BeFalse(), "said once per token")
	for i := 1; i < maxPendingTokens; i++ {
		_, _, dropped = s.hold(fmt.Sprintf("t-%d", i), []keyedWrite{write(i)}, now.Add(time.Duration(i)*time.Second))
		g.Expect(dropped).To(Equal(Dropped{}))
	}
	_, _, dropped = s.hold("t-new", []keyedWrite{write(0)}, now.Add(time.Minute))
	g.Expect(dropped).To(Equal(Dropped{Tokens: 1}), "the token heard from least recently goes")
	st := newTestStore()
	s.Register("t-0", st)
	g.Expect(st.Len()).To(Equal(0))
	st = newTestStore()
	s.Register("t-1", st)
	g.Expect(st.Len()).To(Equal(1))

	many := make([]keyedWrite, maxPendingWrites+5)
	for i := range many {
		many[i] = write(i)
	}
	_, _, dropped = s.hold("t-many", many, now.Add(time.Minute))
	g.Expect(dropped).To(Equal(Dropped{Writes: 5}), "the oldest writes go")

	_, _, dropped = s.hold("t-late", nil, now.Add(time.Minute+pendingTTL+time.Second))
	g.Expect(dropped.Tokens).To(Equal(maxPendingTokens), "all but t-late waited too long; t-1 was claimed")
	st = newTestStore()
	s.Register("t-many", st)
	g.Expect(st.Len()).To(Equal(0), "expired")

	// Registered between the handler's look and hold: recorded, not kept.
	stores, _, _ := s.hold("t-many", []keyedWrite{write(1)}, now.Add(time.Minute+pendingTTL+2*time.Second))
	g.Expect(stores).To(ConsistOf(st))
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
