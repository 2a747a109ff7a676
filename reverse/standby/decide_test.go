package standby

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reflux-dev/reflux/reverse/intake"
)

func TestActing(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	const silence = 10 * time.Second
	// The holder's own renew time is an hour off this replica's clock:
	// only when the standby saw it change counts.
	skewed := Lease{Found: true, Holder: "reflux-a", Renewed: now.Add(-time.Hour)}
	seen := func(ago time.Duration) Observed { return Observed{Known: true, Lease: skewed, Changed: now.Add(-ago)} }
	for _, tc := range []struct {
		name string
		s    State
		want bool
	}{
		{"a renewal seen just now", State{Lease: seen(time.Second)}, false},
		{"a renewal seen within the silence", State{Lease: seen(silence)}, false},
		{"no renewal seen for longer than the silence", State{Lease: seen(silence + time.Millisecond)}, true},
		{"no Lease read yet: it cannot tell", State{}, false},
		{"no Lease: no replica has led yet", State{Lease: Observed{Known: true, Changed: now}}, true},
		{"a released Lease", State{Lease: Observed{Known: true, Lease: Lease{Found: true, Renewed: now}, Changed: now}}, true},
		{"elected, the engine still listing", State{Lease: seen(0), Elected: true}, true},
		{"elected, the engine listed", State{Lease: seen(0), Elected: true, EngineReady: true}, false},
		{"elected over a stale read of the Lease, the engine listed", State{Lease: seen(time.Hour), Elected: true, EngineReady: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Now, tc.s.Silence = now, silence
			if got := Acting(tc.s); got != tc.want {
				t.Errorf("Acting = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	l := Lease{Found: true, Holder: "reflux-a", Renewed: t0.Add(-time.Hour)}
	o := Observe(Observed{}, l, t0)
	if !o.Known || !o.Changed.Equal(t0) {
		t.Fatalf("first read: %+v, want known, changed at t0", o)
	}
	if o = Observe(o, l, t0.Add(5*time.Second)); !o.Changed.Equal(t0) {
		t.Errorf("the same Lease read again moved Changed to %v", o.Changed)
	}
	renewed := l
	renewed.Renewed = l.Renewed.Add(time.Second)
	if o = Observe(o, renewed, t0.Add(6*time.Second)); !o.Changed.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("a renewal left Changed at %v", o.Changed)
	}
	other := renewed
	other.Holder = "reflux-b"
	if o = Observe(o, other, t0.Add(7*time.Second)); !o.Changed.Equal(t0.Add(7*time.Second)) || o.Lease.Holder != "reflux-b" {
		t.Errorf("a new holder: %+v", o)
	}
}

func TestDue(t *testing.T) {
	renewed := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := func(name string) intake.Key {
		return intake.Key{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: name}
	}
	seen := map[intake.Key]time.Time{
		key("long-before"):     renewed.Add(-time.Minute),
		key("within-margin"):   renewed.Add(-500 * time.Millisecond),
		key("after-renewal"):   renewed.Add(3 * time.Second),
		key("at-margin-start"): renewed.Add(-time.Second),
	}
	for _, tc := range []struct {
		name    string
		renewed time.Time
		want    []string
	}{
		{"since the renewal less the margin", renewed, []string{"after-renewal", "at-margin-start", "within-margin"}},
		{"every change when no Lease was read", time.Time{}, []string{"after-renewal", "at-margin-start", "long-before", "within-margin"}},
		{"none when the leader renewed after them all", renewed.Add(time.Hour), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Due(seen, tc.renewed, time.Second)
			var names []string
			for _, k := range got {
				names = append(names, k.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("Due = %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Fatalf("Due = %v, want %v", names, tc.want)
				}
			}
		})
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	k := func(name string) intake.Key { return intake.Key{Name: name} }
	seen := map[intake.Key]time.Time{k("old"): now.Add(-time.Minute), k("recent"): now.Add(-5 * time.Second), k("edge"): now.Add(-10 * time.Second)}
	Prune(seen, now, 10*time.Second)
	if _, ok := seen[k("old")]; ok {
		t.Error("a change older than keep stays")
	}
	for _, name := range []string{"recent", "edge"} {
		if _, ok := seen[k(name)]; !ok {
			t.Errorf("%s was pruned within keep", name)
		}
	}
}
