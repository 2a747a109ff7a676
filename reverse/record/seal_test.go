package record

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
)

func sealedRecord(t *testing.T, s *Sealer) *refluxv1.Drift {
	t.Helper()
	// Nanoseconds on purpose: they are lost on the way through the
	// apiserver, and the seal must not depend on them.
	now := metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 123456789, time.UTC))
	d := &refluxv1.Drift{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "apps-v1-configmap-flags", Annotations: map[string]string{"note": "x"}},
		Spec: refluxv1.DriftSpec{
			Kustomization: refluxv1.KustomizationRef{Namespace: "apps", Name: "web"},
			Policy:        "default",
			Object:        refluxv1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "flags", UID: "u-1"},
			Revision:      "main@sha1:0123",
			Fields: []refluxv1.DriftField{{Pointer: "/data/NEW_FLAG", ChangeType: refluxv1.ChangeAdd,
				Action: refluxv1.MergeAction, Severity: refluxv1.SeverityLow, LiveValue: "on"}},
			FirstSeen: now, LastSeen: now,
		},
	}
	if err := s.Seal(d); err != nil {
		t.Fatal(err)
	}
	return d
}

// roundTrip is the record as a later read returns it.
func roundTrip(t *testing.T, d *refluxv1.Drift) *refluxv1.Drift {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	out := &refluxv1.Drift{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSeal(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSealer([]byte("fedcba9876543210fedcba9876543210"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(d *refluxv1.Drift) *refluxv1.Drift
		sealer *Sealer
		want   error
	}{
		{name: "as written", mutate: func(d *refluxv1.Drift) *refluxv1.Drift { return d }},
		{name: "read back from the apiserver", mutate: func(d *refluxv1.Drift) *refluxv1.Drift { return roundTrip(t, d) }},
		{name: "metadata and status are not sealed", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Annotations[refluxv1.DismissAnnotation] = "true"
			d.Finalizers = []string{refluxv1.DriftFinalizer}
			d.Status.State = refluxv1.DriftHeld
			return d
		}},
		{name: "a field's value changed", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Spec.Fields[0].LiveValue = "off"
			return d
		}, want: ErrBadSeal},
		{name: "a field added", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Spec.Fields = append(d.Spec.Fields, refluxv1.DriftField{Pointer: "/data/OTHER"})
			return d
		}, want: ErrBadSeal},
		{name: "pointed at another object", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Spec.Object.Name = "secrets"
			return d
		}, want: ErrBadSeal},
		{name: "copied under another name", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Name = "copy"
			return d
		}, want: ErrBadSeal},
		{name: "copied to another namespace", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Namespace = "payments"
			return d
		}, want: ErrBadSeal},
		{name: "sealed with another key", mutate: func(d *refluxv1.Drift) *refluxv1.Drift { return d }, sealer: other, want: ErrBadSeal},
		{name: "no seal", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			delete(d.Annotations, refluxv1.SealAnnotation)
			return d
		}, want: ErrUnsealed},
		{name: "no annotations at all", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Annotations = nil
			return d
		}, want: ErrUnsealed},
		{name: "garbage", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Annotations[refluxv1.SealAnnotation] = "v1.!!!"
			return d
		}, want: ErrBadSeal},
		{name: "another version", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Annotations[refluxv1.SealAnnotation] = "v1." + d.Annotations[refluxv1.SealAnnotation][3:]
			return d
		}, want: ErrBadSeal},
		{name: "lastSeen moved alone: reflux's once-a-minute bump", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Spec.LastSeen = metav1.NewTime(d.Spec.LastSeen.Add(time.Minute))
			return d
		}},
		{name: "a v1 seal, over the whole spec, still verifies", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			return withV1Seal(t, s, d)
		}},
		{name: "a v1 seal covers lastSeen", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d = withV1Seal(t, s, d)
			d.Spec.LastSeen = metav1.NewTime(d.Spec.LastSeen.Add(time.Minute))
			return d
		}, want: ErrBadSeal},
		{name: "annotations replaced wholesale: the status seal proves the record", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d = withStatusSeal(t, s, d)
			d.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
			return roundTrip(t, d)
		}},
		{name: "the status seal, lastSeen moved since", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d = withStatusSeal(t, s, d)
			d.Annotations = nil
			d.Spec.LastSeen = metav1.NewTime(d.Spec.LastSeen.Add(time.Minute))
			return d
		}},
		{name: "the status seal, the spec changed since", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d = withStatusSeal(t, s, d)
			d.Annotations = nil
			d.Spec.Fields[0].LiveValue = "off"
			return d
		}, want: ErrBadSeal},
		{name: "a garbled annotation beside a good status seal", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d = withStatusSeal(t, s, d)
			d.Annotations[refluxv1.SealAnnotation] = "v2.AAAA"
			return d
		}},
		{name: "a forged status seal, no annotation", mutate: func(d *refluxv1.Drift) *refluxv1.Drift {
			d.Annotations = nil
			d.Status.Seal = "v2.AAAA"
			return d
		}, want: ErrBadSeal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.mutate(sealedRecord(t, s))
			verifier := s
			if tc.sealer != nil {
				verifier = tc.sealer
			}
			if err := verifier.Verify(d); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewSealerRefusesShortKeys(t *testing.T) {
	if _, err := NewSealer(make([]byte, MinSealKey-1)); err == nil {
		t.Fatal("accepted a 31-byte key")
	}
	if _, err := NewSealer(make([]byte, MinSealKey)); err != nil {
		t.Fatal(err)
	}
}

func withStatusSeal(t *testing.T, s *Sealer, d *refluxv1.Drift) *refluxv1.Drift {
	t.Helper()
	if err := s.SealStatus(d); err != nil {
		t.Fatal(err)
	}
	if d.Status.Seal != d.Annotations[refluxv1.SealAnnotation] {
		t.Fatalf("status seal %q differs from the annotation's %q", d.Status.Seal, d.Annotations[refluxv1.SealAnnotation])
	}
	return d
}

// withV1Seal seals d as reflux did before v2, over the whole spec.
func withV1Seal(t *testing.T, s *Sealer, d *refluxv1.Drift) *refluxv1.Drift {
	t.Helper()
	mac, err := s.mac(d, sealV1)
	if err != nil {
		t.Fatal(err)
	}
	d.Annotations[refluxv1.SealAnnotation] = sealV1 + base64.RawURLEncoding.EncodeToString(mac)
	return d
}
