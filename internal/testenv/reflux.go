package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RefluxUser is the user reflux runs as by default, named like the service
// account of config/manager so audit events and managedFields read as on a
// real cluster.
const RefluxUser = "system:serviceaccount:reflux-system:reflux-controller"

// ErrMissingReflux is returned by StartReflux when the reflux binary has
// not been built.
var ErrMissingReflux = errors.New("reflux binary missing: run `make build`")

// KubeconfigSource provides the identity reflux connects as. The default,
// InstalledUser, is the ServiceAccount config/default installs, bound to
// config/rbac's roles.
type KubeconfigSource func(ctx context.Context, e *Env) (User, error)

// MastersUser returns a KubeconfigSource that provisions name as a
// client-certificate user in system:masters. No journey runs reflux this
// way (issue 9): it would hide a verb config/rbac forgot.
func MastersUser(name string) KubeconfigSource {
	return func(_ context.Context, e *Env) (User, error) {
		return e.AddUser(name, "system:masters")
	}
}

// RefluxOptions configures StartReflux.
type RefluxOptions struct {
	// Binary is the reflux executable. Defaults to bin/reflux in the
	// environment's bin directory, which `make build` writes.
	Binary string
	// Name names the process and its log file, Env.Dir/<Name>.log.
	// Defaults to "reflux"; give a second reflux in one environment its own.
	Name string
	// Kubeconfig provides the identity reflux runs as. Defaults to
	// InstalledUser(), the ServiceAccount of config/default.
	Kubeconfig KubeconfigSource
	// Namespace is reflux's RUNTIME_NAMESPACE, where its Deployment would
	// run: leader election keeps its Lease there. Defaults to
	// RefluxNamespace.
	Namespace string
	// Args are appended to `reflux manager`'s flags; a repeated flag
	// overrides the default, e.g. "--log-level=debug".
	Args []string
	// AuditWebhook makes reflux receive the environment's audit webhook:
	// it listens on a port of its own (--audit-addr), which
	// Env.AuditWebhookAddr forwards to (Env.RouteAudit). Needs
	// Options.AuditWebhook without a URL.
	AuditWebhook bool
	// StartTimeout bounds the wait for /readyz. Defaults to the
	// environment's Options.StartTimeout.
	StartTimeout time.Duration
	// StopGrace is how long reflux may take to exit after SIGTERM before
	// it is killed. Defaults to the environment's Options.StopGrace.
	StopGrace time.Duration
}

// DefaultRefluxOptions returns the options StartReflux fills zero fields
// from, for the environment e.
func DefaultRefluxOptions(e *Env) RefluxOptions {
	return RefluxOptions{
		Binary:       filepath.Join(e.opts.BinDir, "reflux"),
		Name:         "reflux",
		Kubeconfig:   InstalledUser(),
		Namespace:    RefluxNamespace,
		StartTimeout: e.opts.StartTimeout,
		StopGrace:    e.opts.StopGrace,
	}
}

// RefluxProcess is `reflux manager` running as a child of the test. It is
// not one of Env.Processes: stop it before the environment.
type RefluxProcess struct {
	// Process is the child process; its MetricsAddr and HealthAddr are
	// loopback ports of its own.
	*Process
	// AuditAddr is its --audit-addr with RefluxOptions.AuditWebhook.
	AuditAddr string
	// User is the identity reflux connects as.
	User User

	stopGrace time.Duration
}

// StartReflux runs the real reflux binary against e as opts.Kubeconfig's
// user, serving metrics and health on free loopback ports, and waits until
// its /readyz answers. Its log is Env.Dir/<Name>.log.
func StartReflux(ctx context.Context, e *Env, opts RefluxOptions) (*RefluxProcess, error) {
	opts = opts.withDefaults(e)
	if _, err := os.Stat(opts.Binary); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Binary, ErrMissingReflux)
	}
	user, err := opts.Kubeconfig(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("provisioning reflux's user: %w", err)
	}
	// reflux keeps its record key in its own namespace, which
	// config/default creates; a user source that does not install it
	// (MastersUser) still needs the namespace.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
	}
	home := filepath.Join(e.Dir, opts.Name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("creating home of %s: %w", opts.Name, err)
	}
	env, err := childEnv(home, user.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	env = append(env, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "RUNTIME_NAMESPACE="+opts.Namespace)
	auditAddr := ""
	start := func() (*Process, error) {
		addrs, err := freeAddrs(3)
		if err != nil {
			return nil, err
		}
		var audit []string
		if opts.AuditWebhook {
			// A port of this start's own: one a restart cannot take
			// again is picked afresh, and the environment's address
			// forwards to it.
			auditAddr = addrs[2]
			if err := e.RouteAudit(auditAddr); err != nil {
				return nil, err
			}
			audit = []string{"--audit-addr=" + auditAddr}
		}
		args := append(append([]string{
			"manager",
			"--metrics-addr=" + addrs[0],
			"--health-addr=" + addrs[1],
			"--enable-leader-election=false",
			"--log-level=info",
			"--log-encoding=console",
			"--kustomize-controller-version=" + FluxVersion(),
		}, audit...), opts.Args...)
		p, err := startProcess(opts.Name, opts.Binary, args, env, e.Dir)
		if err != nil {
			return nil, err
		}
		p.MetricsAddr, p.HealthAddr = addrs[0], addrs[1]
		return p, nil
	}
	p, err := start()
	if err != nil {
		return nil, err
	}
	p, err = readyOrRestart(ctx, opts.StartTimeout, p, start)
	if p == nil {
		return nil, err
	}
	r := &RefluxProcess{Process: p, User: user, AuditAddr: auditAddr, stopGrace: opts.StopGrace}
	if err != nil {
		return nil, errors.Join(err, r.Stop())
	}
	return r, nil
}

func (o RefluxOptions) withDefaults(e *Env) RefluxOptions {
	d := DefaultRefluxOptions(e)
	if o.Binary == "" {
		o.Binary = d.Binary
	}
	if o.Name == "" {
		o.Name = d.Name
	}
	if o.Kubeconfig == nil {
		o.Kubeconfig = d.Kubeconfig
	}
	if o.Namespace == "" {
		o.Namespace = d.Namespace
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = d.StartTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = d.StopGrace
	}
	return o
}

// Stop ends reflux with SIGTERM, as a rollout would, and kills it after
// the grace period. Stopping twice returns the first result.
func (r *RefluxProcess) Stop() error {
	return r.Process.Stop(r.stopGrace)
}

// Kill ends reflux with SIGKILL, as the kernel's OOM killer or a lost
// node would: no deferred work runs, no lease is released. It returns once
// the process is gone; Stop afterwards only closes the log.
func (r *RefluxProcess) Kill() error {
	return r.Process.Kill()
}

// Pid is reflux's process id.
func (r *RefluxProcess) Pid() int {
	return r.cmd.Process.Pid
}

// Metrics scrapes the process's /metrics once: reflux's, or a Flux
// controller's, whose MetricsAddr the environment sets too.
func (p *Process) Metrics(ctx context.Context) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := "http://" + p.MetricsAddr + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("building metrics request: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return Metrics(families), nil
}

// Metrics are the metric families of one scrape, by name.
type Metrics map[string]*dto.MetricFamily

// Sum adds up every series of the family name: the values of a counter,
// gauge or untyped metric, the sample counts of a histogram or summary.
// ok is false when reflux does not export the family.
func (m Metrics) Sum(name string) (sum float64, ok bool) {
	f, ok := m[name]
	if !ok {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		sum += seriesValue(s)
	}
	return sum, true
}

// seriesValue is one series' value as Sum and Value add it up.
func seriesValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	case s.Summary != nil:
		return float64(s.Summary.GetSampleCount())
	}
	return 0
}

// Value adds up, as Sum does, the series of the family name whose labels
// include every pair of match: one queue's depth out of workqueue_depth,
// say. ok is false when the family or every matching series is missing.
func (m Metrics) Value(name string, match map[string]string) (sum float64, ok bool) {
	for _, s := range m[name].GetMetric() {
		if hasLabels(s, match) {
			sum, ok = sum+seriesValue(s), true
		}
	}
	return sum, ok
}

func hasLabels(s *dto.Metric, match map[string]string) bool {
	have := map[string]string{}
	for _, l := range s.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range match {
		if have[k] != v {
			return false
		}
	}
	return true
}

// RSS is reflux's resident set size in bytes now (VmRSS).
func (r *RefluxProcess) RSS() (int64, error) {
	return r.statusBytes("VmRSS")
}

// PeakRSS is the most reflux has been resident since it started, in bytes
// (VmHWM, the high-water mark).
func (r *RefluxProcess) PeakRSS() (int64, error) {
	return r.statusBytes("VmHWM")
}

func (r *RefluxProcess) statusBytes(field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.Pid()))
	if err != nil {
		return 0, fmt.Errorf("reading the status of %s: %w", r.Name, err)
	}
	return parseStatusBytes(string(raw), field)
}

// parseStatusBytes reads a "Field:   1234 kB" line of /proc/<pid>/status.
func parseStatusBytes(status, field string) (int64, error) {
	for line := range strings.Lines(status) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", field, strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// userHZ is the unit of the tick counts in /proc/<pid>/stat. The kernel
// exports them in USER_HZ, which is 100 on every architecture Linux still
// builds for, whatever CONFIG_HZ is; reading sysconf(_SC_CLK_TCK) would
// need cgo for the same answer.
const userHZ = 100

// CPUTime is the processor time reflux has used, user and system, since
// it started.
func (r *RefluxProcess) CPUTime() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.Pid()))
	if err != nil {
		return 0, fmt.Errorf("reading the stat of %s: %w", r.Name, err)
	}
	return parseCPUTime(string(raw))
}

// parseCPUTime reads utime and stime, fields 14 and 15 of
// /proc/<pid>/stat. The command name, field 2, is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last
// ')'.
func parseCPUTime(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	// After the name: state (field 3) ... utime (14), stime (15).
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing CPU ticks %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
