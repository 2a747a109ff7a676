package execute

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// TestClosedWhy is what a DriftResolved or DriftDismissed event says of a
// close: how, and by whom when known.
func TestClosedWhy(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	tests := []struct {
		name string
		c    *refluxv1.DriftClosure
		want string
	}{
		{"no closure: the decision's why", nil, "dismissal requested"},
		{"reason only", &refluxv1.DriftClosure{Reason: "Merged", Time: at}, "Merged"},
		{"reason and message", &refluxv1.DriftClosure{Reason: "Reverted", Message: "put back", Time: at}, "Reverted: put back"},
		{"and who", &refluxv1.DriftClosure{Reason: "Dismissed", Message: "annotated", By: "alice (kubectl-annotate)", Time: at},
			"Dismissed: annotated, by alice (kubectl-annotate)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(closedWhy(tt.c, "dismissal requested")).To(Equal(tt.want))
		})
	}
}

// TestKeyedMutexSerialisesOneKeyOnly: two writers of one record take
// turns; another record's writer does not wait for them.
func TestKeyedMutexSerialisesOneKeyOnly(t *testing.T) {
	g := NewWithT(t)
	k := newKeyedMutex()
	unlock := k.lock("flux-system/a")
	other := make(chan struct{})
	go func() {
		k.lock("flux-system/b")()
		close(other)
	}()
	g.Eventually(other).Should(BeClosed(), "another record is not held up")

	var mu sync.Mutex
	order := []string{}
	second := make(chan struct{})
	go func() {
		k.lock("flux-system/a")()
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		close(second)
	}()
	g.Consistently(second, 100*time.Millisecond).ShouldNot(BeClosed(), "the same record waits")
	mu.Lock()
	order = append(order, "first")
	mu.Unlock()
	unlock()
	g.Eventually(second).Should(BeClosed())
	g.Expect(order).To(Equal([]string{"first", "second"}))
	g.Expect(k.locks).To(BeEmpty(), "no lock is kept once released")
}
