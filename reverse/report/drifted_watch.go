package report

import (
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// watchForbiddenCondition is Drifted=Unknown for kinds reflux's own RBAC
// does not let it watch: their drift is not detected, whatever the other
// kinds show. The message names the first refused watch and its fix; the
// log has every one. Drift of the kinds reflux does watch is still
// recorded, and the message counts it.
func watchForbiddenCondition(denied []error, open []refluxv1.Drift) *metav1.Condition {
	more := ""
	if n := len(denied) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more refused watch(es))", n)
	}
	others := "the other kinds are watched"
	if len(open) > 0 {
		others = "the other kinds are watched: " + driftMessage(open)
	}
	return conditions.UnknownCondition(refluxv1.DriftedCondition, refluxv1.WatchForbiddenReason,
		"%s%s; %s", denied[0], more, others)
}
