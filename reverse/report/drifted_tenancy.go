package report

import (
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/reverse/governor"
)

// forbiddenCondition is Drifted=Unknown for changes the Kustomization's
// impersonated ServiceAccount (ImpersonationForbidden), or reflux itself
// when it names none (ActionForbidden), may not dry-run or hold: drift
// cannot be told for them, whatever the other objects show. The message
// names the first missing permission and its object; the log has every
// one.
func forbiddenCondition(denied []governor.Denial) *metav1.Condition {
	first := denied[0]
	more := ""
	if n := len(denied) - 1; n > 0 {
		more = fmt.Sprintf(", and %d more object(s)", n)
	}
	reason, fix := refluxv1.ImpersonationForbiddenReason, ""
	if first.Err.Self {
		reason = refluxv1.ActionForbiddenReason
		fix = fmt.Sprintf(" (to reflux, in a ClusterRole labelled %s: \"true\")", refluxv1.WorkloadsAggregationLabel)
	}
	return conditions.UnknownCondition(refluxv1.DriftedCondition, reason,
		"%s (%s%s); %d live change(s) kept without a hold until the permission is granted%s",
		first.Err, first.Object, more, len(denied), fix)
}
