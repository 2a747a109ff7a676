package testenv

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

func TestMetricsValue(t *testing.T) {
	const scrape = `# TYPE workqueue_depth gauge
workqueue_depth{controller="a",name="reflux-live"} 7
workqueue_depth{controller="b",name="reflux-live"} 2
workqueue_depth{name="reflux-hold"} 3
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",method="GET"} 10
rest_client_requests_total{code="201",method="POST"} 4
`
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	m := Metrics(families)
	for _, tc := range []struct {
		name   string
		family string
		match  map[string]string
		want   float64
		wantOK bool
	}{
		{name: "one queue over two series", family: "workqueue_depth", match: map[string]string{"name": "reflux-live"}, want: 9, wantOK: true},
		{name: "another queue", family: "workqueue_depth", match: map[string]string{"name": "reflux-hold"}, want: 3, wantOK: true},
		{name: "no label is every series", family: "rest_client_requests_total", want: 14, wantOK: true},
		{name: "two labels", family: "workqueue_depth", match: map[string]string{"name": "reflux-live", "controller": "b"}, want: 2, wantOK: true},
		{name: "no series matches", family: "workqueue_depth", match: map[string]string{"name": "reflux-resync"}},
		{name: "no such family", family: "reflux_nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := m.Value(tc.family, tc.match)
			g.Expect(ok).To(Equal(tc.wantOK))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
