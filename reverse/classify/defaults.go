package classify

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

// builtin applies the documented defaults (see refluxv1.Defaults). The
// order matters: a securityContext image-pull field is still high, and a
// resource that is not 4x over falls through to the unmatched default.
func (c *Classifier) builtin(f Field) Decision {
	seg := segments(f.Pointer)
	switch {
	case f.Pointer == refluxv1.WholeObjectPointer && f.ChangeType == refluxv1.ChangeRemove:
		// A declared object deleted live: there is nothing to hold, and
		// Flux recreates it, but someone removed a workload or its config.
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, Rule: "default:object-deleted"}
	case f.Pointer == refluxv1.WholeObjectPointer && f.ChangeType == refluxv1.ChangeUpdate:
		// A Secret written live that reflux may not read: who and when
		// are known, what is not, so nothing can be held or merged.
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, Rule: "default:content-not-read"}
	case isConfigMapKeyAdd(f, seg):
		return Decision{Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, Rule: "default:configmap-new-key", Hold: true}
	case isContainerImage(seg):
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, Rule: "default:image", Hold: true}
	case slices.Contains(seg, "securityContext"):
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityHigh, Rule: "default:security-context", Hold: true}
	case isResourceQuantity(seg) && c.exceedsFactor(f):
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityCritical, Rule: "default:resources", Hold: true}
	case f.Pointer == "/spec/replicas":
		return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityLow, Rule: "default:replicas", Hold: true}
	}
	return Decision{Action: refluxv1.AlertAction, Severity: refluxv1.SeverityMedium, Rule: "default:unmatched", Hold: true}
}

func isConfigMapKeyAdd(f Field, seg []string) bool {
	return f.Kind == "ConfigMap" && f.ChangeType == refluxv1.ChangeAdd &&
		len(seg) == 2 && (seg[0] == "data" || seg[0] == "binaryData")
}

// isContainerImage matches .../containers/N/image at any depth, so Pods,
// Deployments, CronJobs and custom workloads are all covered.
func isContainerImage(seg []string) bool {
	n := len(seg)
	if n < 3 || seg[n-1] != "image" {
		return false
	}
	if _, err := strconv.Atoi(seg[n-2]); err != nil {
		return false
	}
	switch seg[n-3] {
	case "containers", "initContainers", "ephemeralContainers":
		return true
	}
	return false
}

// isResourceQuantity matches .../resources/{limits,requests}/NAME.
func isResourceQuantity(seg []string) bool {
	n := len(seg)
	return n >= 3 && seg[n-3] == "resources" && (seg[n-2] == "limits" || seg[n-2] == "requests")
}

// exceedsFactor reports whether the live quantity is at least the policy's
// factor times the declared one. A quantity that does not parse, or a
// declared zero, cannot be compared and is not critical on this ground.
func (c *Classifier) exceedsFactor(f Field) bool {
	git, ok1 := quantity(f.GitValue)
	live, ok2 := quantity(f.LiveValue)
	if !ok1 || !ok2 || git.Sign() <= 0 {
		return false
	}
	threshold := git.DeepCopy()
	threshold.Mul(int64(c.defaults.ResourceFactor))
	return live.Cmp(threshold) >= 0
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch t := v.(type) {
	case string:
		s = t
	case float64:
		s = strconv.FormatFloat(t, 'f', -1, 64)
	case int64:
		s = strconv.FormatInt(t, 10)
	case int:
		s = strconv.Itoa(t)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, false
	}
	return q, true
}
