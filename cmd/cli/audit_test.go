package cli

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reflux-dev/reflux/internal/audit"
)

// TestAuditMetrics: the store's size and its early drops, and those of
// the writes to kinds not watched, are exported as they stand at scrape
// time.
func TestAuditMetrics(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	store := audit.NewStore(audit.WithMaxWrites(2), audit.WithMaxRefused(3), audit.WithClock(func() time.Time { return now }))
	store.Keep(func(k audit.ObjectKey) bool { return k.Resource == "configmaps" })
	reg := prometheus.NewRegistry()
	g.Expect(registerAuditMetrics(reg, store)).To(Succeed())
	for _, name := range []string{"a", "b", "c"} {
		store.Record(audit.ObjectKey{Resource: "configmaps", Namespace: "apps", Name: name}, audit.Write{User: "alice", Time: now})
	}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		store.Record(audit.ObjectKey{Resource: "resourcequotas", Namespace: "apps", Name: name}, audit.Write{User: "bob", Time: now})
	}
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reflux_audit_evicted_total Writes the audit webhook dropped before their TTL because its store was full.
# TYPE reflux_audit_evicted_total counter
reflux_audit_evicted_total 1
# HELP reflux_audit_unwatched_evicted_total Writes to kinds not watched the audit webhook dropped before their TTL because their bound was full.
# TYPE reflux_audit_unwatched_evicted_total counter
reflux_audit_unwatched_evicted_total 2
# HELP reflux_audit_unwatched_writes Writes to kinds not watched (yet) the audit webhook remembers apart (at most 20000).
# TYPE reflux_audit_unwatched_writes gauge
reflux_audit_unwatched_writes 3
# HELP reflux_audit_writes Writes the audit webhook remembers for attribution (at most 200000).
# TYPE reflux_audit_writes gauge
reflux_audit_writes 2
`))).To(Succeed())
}
