package governor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/metrics"
	"github.com/reflux-dev/reflux/reverse/writeback/scheduler"
)

// What the Kustomization reconciler reports with.

// WriteBackStatus is the outcome of a Kustomization's last write-back.
type WriteBackStatus = scheduler.WriteBackStatus

// ReverseSynced summarises a write-back in the Kustomization's
// ReverseSynced condition.
func ReverseSynced(ws *WriteBackStatus) *metav1.Condition { return scheduler.ReverseSynced(ws) }

// Metrics are reflux's own metrics (reverse/metrics).
type Metrics = metrics.Metrics

// NewMetrics creates the metrics' collectors (metrics.New).
func NewMetrics(opts ...metrics.Option) (*Metrics, error) { return metrics.New(opts...) }

// WithTeamLabel names the Kustomization label whose value becomes the
// team label of the drift metrics (metrics.WithTeamLabel).
func WithTeamLabel(key string) metrics.Option { return metrics.WithTeamLabel(key) }

// Event reasons and the paging prefix, as the events carry them.
const (
	BranchDeletedEventReason   = refluxv1.BranchDeletedEventReason
	HoldExpiredEventReason     = refluxv1.HoldExpiredEventReason
	RecordNotSealedEventReason = refluxv1.RecordNotSealedEventReason
	CriticalPrefix             = refluxv1.CriticalPrefix
)
