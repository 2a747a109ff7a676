package evaluate

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/observe"
)

// written is a WrittenReader that answers what it holds.
type written struct {
	writer *refluxv1.Modifier
	err    error
}

func (w written) Written(*unstructured.Unstructured) (*refluxv1.Modifier, []refluxv1.WrittenField, error) {
	if w.writer == nil {
		return nil, nil, w.err
	}
	m := *w.writer
	return &m, []refluxv1.WrittenField{{Pointer: "/data/a", LiveValue: `"b"`}}, w.err
}

// namer is a UserNamer that knows one manager's user.
type namer struct{ manager string }

func (n namer) User(_ *unstructured.Unstructured, manager string, _ time.Time) observe.Who {
	if manager != n.manager {
		return observe.Who{}
	}
	return observe.Who{User: "alice@example.com", Groups: []string{"oncall"}}
}

// TestWrittenBy: the audit log names the writer's user when it has the
// write, and only then; no writer that can drift, or an error reading
// managedFields, is passed on as is.
func TestWrittenBy(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC))
	kubectl := &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &at}
	for _, tc := range []struct {
		name    string
		r       written
		users   UserNamer
		want    *refluxv1.Modifier
		wantErr bool
	}{
		{name: "named by the audit log", r: written{writer: kubectl}, users: namer{manager: "kubectl-edit"},
			want: &refluxv1.Modifier{Manager: "kubectl-edit", Operation: "Update", Time: &at, User: "alice@example.com", Groups: []string{"oncall"}}},
		{name: "the audit log has not the write yet", r: written{writer: kubectl}, users: namer{manager: "helm"}, want: kubectl},
		{name: "no audit log", r: written{writer: kubectl}, want: kubectl},
		{name: "a write with no time is not looked up", r: written{writer: &refluxv1.Modifier{Manager: "kubectl-edit"}},
			users: namer{manager: "kubectl-edit"}, want: &refluxv1.Modifier{Manager: "kubectl-edit"}},
		{name: "only writers that never drift", r: written{}, users: namer{manager: "kubectl-edit"}},
		{name: "managedFields unreadable", r: written{writer: kubectl, err: errors.New("bad managedFields")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			writer, fields, err := WrittenBy(tc.r, tc.users, &unstructured.Unstructured{})
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect(writer).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(writer).To(Equal(tc.want))
			if tc.want == nil {
				g.Expect(fields).To(BeEmpty())
			} else {
				g.Expect(fields).To(HaveLen(1))
			}
		})
	}
}
