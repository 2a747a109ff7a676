package soak

import (
	"strings"
	"testing"
	"time"
)

// TestBreachesNameTheirEditsAndGroupByKind: a breach lists when each of
// its object's edits was made, marking those made while no replica led,
// so it can be traced through the replicas' logs; the breakdown by kind
// ignores those times.
func TestBreachesNameTheirEditsAndGroupByKind(t *testing.T) {
	at := time.Date(2026, 12, 7, 11, 52, 20, 0, time.UTC)
	f := newFigures()
	f.noLeader(at, at.Add(7*time.Second))
	k := objKey{Tenant: "soak-0", Name: "cm-0107"}
	edits := []timedEdit{
		{At: at.Add(-time.Minute), Key: k, Pointer: "/data/SOAK_M1"},
		{At: at.Add(3 * time.Second), Key: k},
	}
	got := f.editTimes(edits)
	want := "{edits: 11:51:20.000 /data/SOAK_M1, 11:52:23.000* delete}"
	if got != want {
		t.Fatalf("editTimes = %q, want %q", got, want)
	}
	f.breach("soak-0/cm-0107: deleted live [1 of its 2 edits made while no replica led] %s", got)
	f.breach("soak-1/cm-0009: deleted live [0 of its 1 edits made while no replica led] %s",
		f.editTimes([]timedEdit{{At: at.Add(time.Hour), Key: k}}))
	section := f.markdown(config{}, at, time.Minute)
	if !strings.Contains(section, "     2  #: deleted live [# of its # edits made while no replica led] #\n") {
		t.Errorf("the two breaches are not one kind:\n%s", section)
	}
	if !strings.Contains(section, want) {
		t.Errorf("the breach lines lost their edits:\n%s", section)
	}
}
