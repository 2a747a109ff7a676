package testenv

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParseStatusBytes(t *testing.T) {
	status := "Name:\treflux\nVmPeak:\t 1300000 kB\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\nThreads:\t12\n"
	for _, tc := range []struct {
		field   string
		want    int64
		wantErr string
	}{
		{field: "VmRSS", want: 40960 << 10},
		{field: "VmHWM", want: 81920 << 10},
		{field: "VmSwap", wantErr: "no VmSwap"},
		{field: "Threads", wantErr: "unexpected Threads line"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseStatusBytes(status, tc.field)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestParseCPUTime(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{
			name: "plain",
			stat: "4242 (reflux) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 130 0 0 20 0 12 0 100 0 0",
			want: 3800 * time.Millisecond,
		},
		{
			name: "name with spaces and parentheses",
			stat: "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 9000 0 0 0 7 3 0 0 20 0 12 0 100 0 0",
			want: 100 * time.Millisecond,
		},
		{name: "truncated", stat: "4242 (reflux) S 1 4242", wantErr: true},
		{name: "garbage", stat: "no parenthesis", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseCPUTime(tc.stat)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
