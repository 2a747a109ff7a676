package governor

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reflux-dev/reflux/reverse"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// auditStore answers Deleter from what it heard; nothing else is asked.
type auditStore struct {
	heard *reverse.Deleter
}

func (a auditStore) User(*unstructured.Unstructured, string, time.Time) observe.Who {
	return observe.Who{}
}
func (a auditStore) Writer(*unstructured.Unstructured, time.Time, func(string) bool) (reverse.AuditedWrite, bool) {
	return reverse.AuditedWrite{}, false
}
func (a auditStore) Deleter(*unstructured.Unstructured, time.Time) (reverse.Deleter, bool) {
	if a.heard == nil {
		return reverse.Deleter{}, false
	}
	return *a.heard, true
}

// TestDeleterOfADeletionAPredecessorWroteDown: the audit store of a
// process started after a deletion knows nothing of it; the Pending record
// its predecessor wrote names the deleter, and that is who it was. What
// the audit store heard comes first, and without a record's word the
// deletion waits for the audit log.
func TestDeleterOfADeletionAPredecessorWroteDown(t *testing.T) {
	obj := &unstructured.Unstructured{}
	flux := reverse.Deleter{User: "system:serviceaccount:flux-system:kustomize-controller", Flux: true}
	tests := []struct {
		name      string
		attr      Attributor
		deletedBy string
		want      reverse.Deleter
		known     bool
	}{
		{name: "the audit store heard it", attr: auditStore{heard: &flux}, deletedBy: "alice", want: flux, known: true},
		{name: "a new process: the record says", attr: auditStore{}, deletedBy: "alice", want: reverse.Deleter{User: "alice"}, known: true},
		{name: "nobody says yet: wait for the audit log", attr: auditStore{}},
		{name: "no audit log at all", deletedBy: "alice", want: reverse.Deleter{User: "alice"}, known: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gv := &Governor{opts: Options{Attributor: tt.attr}}
			got, known := gv.deleter(obj, intake.Change{DeletedBy: tt.deletedBy})
			g.Expect(known).To(Equal(tt.known))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
