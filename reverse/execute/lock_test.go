package execute

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The hold lane only acts on a record nobody decides for: tryLock never
// waits, and a lock taken by tryLock makes lock wait like any other.
func TestTryLockNeverWaits(t *testing.T) {
	g := NewWithT(t)
	k := newKeyedMutex()
	unlock, ok := k.tryLock("checkout/configmap-flags")
	g.Expect(ok).To(BeTrue(), "free")
	_, ok = k.tryLock("checkout/configmap-flags")
	g.Expect(ok).To(BeFalse(), "taken by the first")
	other, ok := k.tryLock("checkout/configmap-limits")
	g.Expect(ok).To(BeTrue(), "another record is its own")
	other()

	got := make(chan struct{})
	go func() {
		unlockAgain := k.lock("checkout/configmap-flags")
		close(got)
		unlockAgain()
	}()
	g.Consistently(got).ShouldNot(BeClosed(), "lock waits for tryLock's holder")
	unlock()
	g.Eventually(got).Should(BeClosed())
	g.Eventually(func() int {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.locks)
	}).Should(BeZero(), "no lock is kept once nobody holds or waits")
	_, ok = k.tryLock("checkout/configmap-flags")
	g.Expect(ok).To(BeTrue(), "free again")
}
