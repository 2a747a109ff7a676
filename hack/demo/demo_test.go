package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	refluxv1 "github.com/reflux-dev/reflux/api/v1alpha1"
	"github.com/reflux-dev/reflux/internal/testenv"
	"github.com/reflux-dev/reflux/kustomize"
	"github.com/reflux-dev/reflux/kustomize/origin"
	"github.com/reflux-dev/reflux/reverse/policy"
	"github.com/reflux-dev/reflux/reverse/writeback/signing"
)

// TestDemo runs the demo as `DEMO_EXIT=1 make demo` does, against the
// real environment and a freshly built reflux: the setup steps, then the
// scenario steps on the environment they left. One environment serves
// both, as in the demo; the scenario is skipped when the setup failed.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	d, err := newDemo(options{refluxBin: buildReflux(t), exit: exitAfterScenario, out: &out})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := d.teardown(); err != nil {
			t.Errorf("tearing down: %v", err)
		}
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
			printTails(t.Output(), append(d.refluxLogs(), d.fluxLogs()...))
		}
	})
	if !t.Run("setup", func(t *testing.T) { checkSetup(t, d, &out) }) {
		t.FailNow()
	}
	t.Run("scenario", func(t *testing.T) { checkScenario(t, d, &out) })
	t.Run("reflux dies", func(t *testing.T) { checkRefluxDeath(t, d) })
}

// checkRefluxDeath kills reflux as the OOM killer would and checks the
// demo, waiting for Ctrl-C, says so at once and shows the log's tail.
func checkRefluxDeath(t *testing.T, d *demo) {
	g := NewWithT(t)
	g.Expect(d.refluxGone()).To(Succeed(), "reflux is alive before the kill")
	g.Expect(d.reflux.Kill()).To(Succeed())
	var out bytes.Buffer
	// Bounded: a demo that missed the death would wait for Ctrl-C forever.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := d.watchReflux(ctx, &out)
	g.Expect(err).To(MatchError(errRefluxExited), "the demo noticed reflux's death before the timeout")
	g.Expect(out.String()).To(And(
		ContainSubstring("reflux died: reflux exited: signal: killed"),
		ContainSubstring("--- end of "+d.refluxLogPath()+" ---\n20"), // a log line's timestamp
	))
}

// checkSetup runs the setup steps and checks what the summary promises:
// Flux applied the app, the policy governs it, and reflux is serving.
func checkSetup(t *testing.T, d *demo, out *bytes.Buffer) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(runSteps(ctx, out, d.setupSteps())).To(Succeed())

	ks := &kustomizev1.Kustomization{}
	g.Expect(d.env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNamespace, Name: appName}, ks)).To(Succeed())
	g.Expect(conditions.IsReady(ks)).To(BeTrue(), "Kustomization conditions: %v", ks.Status.Conditions)
	g.Expect(ks.Status.LastAppliedRevision).To(HaveSuffix(d.revision))

	rsp := &refluxv1.ReverseSyncPolicy{}
	g.Expect(d.env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNamespace, Name: policyName}, rsp)).To(Succeed())
	g.Expect(conditions.IsReady(rsp)).To(BeTrue(), "policy conditions: %v", rsp.Status.Conditions)
	g.Expect(rsp.Status.Kustomizations).To(BeEquivalentTo(1))

	g.Expect(readyz(ctx, d.reflux.HealthAddr)).To(Succeed())
	// reflux runs as config/default installed it, not as an admin.
	g.Expect(d.reflux.User.Name).To(Equal(testenv.RefluxUser))
	g.Expect(d.reflux.User.Config.BearerToken).NotTo(BeEmpty(), "a TokenRequest token, not a client certificate")
	g.Expect(d.reflux.User.Config.CertData).To(BeEmpty())
	role := &rbacv1.ClusterRole{}
	g.Expect(d.env.Client.Get(ctx, client.ObjectKey{Name: "reflux-manager"}, role)).To(Succeed())

	var summary bytes.Buffer
	d.printSummary(&summary)
	g.Expect(summary.String()).To(And(
		ContainSubstring("export KUBECONFIG="+d.env.KubeconfigPath),
		ContainSubstring("git clone http://reflux:"),
		ContainSubstring(d.reflux.HealthAddr),
		ContainSubstring(d.refluxLogPath()),
	))
}

// checkScenario runs the scenario steps and checks, apart from what the
// steps themselves check, that the flag's record is attributed to the
// on-call person and Resolved once its pull request was merged in Gitea,
// which deleted its branch, that the reviewed branch carried the minimal
// edit, that gpg and Gitea found the signature good, and that the replicas
// Alert went to a needs-decision branch with a pull request of its own.
func checkScenario(t *testing.T, d *demo, out *bytes.Buffer) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(runSteps(ctx, out, d.scenarioSteps())).To(Succeed())

	flag, err := d.record(ctx, "ConfigMap", flagsName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(flag.Status.State).To(Equal(refluxv1.DriftResolved))
	g.Expect(flag.Status.Action).To(Equal(refluxv1.DriftMerge))
	g.Expect(flag.Status.Branch).To(HavePrefix("reflux/flux-system-podinfo/"))
	g.Expect(flag.Status.Branch).NotTo(ContainSubstring("needs-decision"))
	g.Expect(flag.Status.PullRequest).To(HavePrefix(d.repoWebURL() + "/pulls/"))
	g.Expect(fieldOf(flag, flagPointer)).To(HaveField("Modifier.User", oncallUser))
	g.Expect(d.scenario.merged).NotTo(BeNil())
	g.Expect(*d.scenario.merged).To(And(HaveField("URL", flag.Status.PullRequest), HaveField("Merged", true)))

	remote, err := runGit(ctx, "", nil, "ls-remote", "--heads", d.httpCloneURL(), flag.Status.Branch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote).To(BeEmpty(), "Gitea deleted the merged branch")
	flags, err := os.ReadFile(filepath.Join(d.scenario.checkout, "base", "flags.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(flags)).To(ContainSubstring("# rolling out in Q3\n  " + hotfixFlag + `: "true"` + "\n"))
	g.Expect(d.scenario.signature).To(ContainSubstring(`Good signature from "reflux (make demo) <reflux@example.com>"`))
	g.Expect(d.scenario.giteaVerified).To(BeTrue())

	replicas, err := d.record(ctx, "Deployment", appName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicas.Status.Action).To(Equal(refluxv1.DriftAlert))
	g.Expect(replicas.Status.Branch).To(ContainSubstring("/needs-decision-"))
	g.Expect(replicas.Status.PullRequest).To(HavePrefix(d.repoWebURL() + "/pulls/"))

	// The chart's Deployment: held with helm-controller's key, its record
	// naming the HelmRelease and the values line of base/cache.yaml.
	cache, err := d.record(ctx, "Deployment", cacheName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cache.Spec.HelmRelease).To(Equal(&refluxv1.HelmReleaseRef{Namespace: appNamespace, Name: cacheName,
		Release: appNamespace + "/" + cacheName + ".v1"}))
	g.Expect(fieldOf(cache, replicasPtr).Origin).To(Equal(&refluxv1.FieldOrigin{File: "base/cache.yaml", Line: 23, Column: 19,
		Kind: "values", ValuesKeys: []string{"replicaCount"}, Template: "templates/deployment.yaml:8"}))
	live := &appsv1.Deployment{}
	g.Expect(d.env.Client.Get(ctx, objectKey(cacheName), live)).To(Succeed())
	g.Expect(live.Annotations).To(HaveKeyWithValue(refluxv1.HelmDriftDetectionAnnotation, refluxv1.HelmDriftDetectionDisabled))
	g.Expect(*live.Spec.Replicas).To(Equal(cacheReplicas))

	g.Expect(out.String()).To(And(
		ContainSubstring("origin  base/cache.yaml:23:19 (values)"),
		ContainSubstring("values  replicaCount, rendered by the chart's templates/deployment.yaml:8"),
		ContainSubstring("who     "+oncallUser+" via "+hotfixManager),
		ContainSubstring("branch "+flag.Status.Branch+"  pull request "+flag.Status.PullRequest),
		ContainSubstring("+  "+hotfixFlag+`: "true"`),
		ContainSubstring("ReverseSynced=True"),
		ContainSubstring(refluxv1.DismissAnnotation+"=true"),
	))
}

// buildReflux builds the binary under test rather than trusting a bin/reflux
// that `make build` may have left stale.
func buildReflux(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "reflux")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/reflux-dev/reflux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building reflux: %v\n%s", err, b)
	}
	return bin
}

// TestPolicyRulesMatchTheApp renders the embedded app as Flux does and
// checks that the demo policy's path rule points at the file declaring
// the feature flags, so a flag edit in the cluster is the Merge the
// summary suggests trying.
func TestPolicyRulesMatchTheApp(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(writeApp(dir)).To(Succeed())
	idx, res, err := origin.Build(context.Background(), kustomize.BuildOptions{Root: dir, Path: appPath})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.ModelErr).NotTo(HaveOccurred())

	var kinds []string
	for _, o := range res.Objects {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	g.Expect(kinds).To(ConsistOf("Deployment/podinfo", "Service/podinfo", "ConfigMap/podinfo-flags", "HelmRelease/cache"))

	flag, err := idx.Lookup(origin.ObjectRef{Kind: "ConfigMap", Name: "podinfo-flags"}, "/data/FEATURE_CHECKOUT_V2")
	g.Expect(err).NotTo(HaveOccurred())
	rule := demoPolicy("http://127.0.0.1:3000").Spec.Rules[0]
	g.Expect(rule.Action).To(Equal(refluxv1.MergeAction))
	g.Expect(path.Match(rule.Paths[0], flag.File)).To(BeTrue(), "flag declared in %s", flag.File)

	image, err := idx.Lookup(origin.ObjectRef{Group: "apps", Kind: "Deployment", Name: "podinfo"},
		"/spec/template/spec/containers/0/image")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image.File).To(Equal("overlays/prod/kustomization.yaml"))
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		exit    exitPoint
		wantErr bool
	}{
		{name: "default waits", exit: exitNever},
		{name: "after setup", args: []string{"--exit-after-setup"}, exit: exitAfterSetup},
		{name: "after scenario", args: []string{"--exit-after-scenario"}, exit: exitAfterScenario},
		{name: "both flags: the earlier exit", args: []string{"--exit-after-scenario", "--exit-after-setup"}, exit: exitAfterSetup},
		{name: "DEMO_EXIT=1 runs the scenario", env: "1", exit: exitAfterScenario},
		{name: "DEMO_EXIT=true", env: "true", exit: exitAfterScenario},
		{name: "DEMO_EXIT=scenario", env: "scenario", exit: exitAfterScenario},
		{name: "DEMO_EXIT=setup", env: "setup", exit: exitAfterSetup},
		{name: "DEMO_EXIT=0", env: "0", exit: exitNever},
		{name: "DEMO_EXIT=0 keeps the flag", args: []string{"--exit-after-setup"}, env: "0", exit: exitAfterSetup},
		{name: "DEMO_EXIT=setup beats the flag", args: []string{"--exit-after-scenario"}, env: "setup", exit: exitAfterSetup},
		{name: "bad DEMO_EXIT", env: "soon", wantErr: true},
		{name: "stray argument", args: []string{"now"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			getenv := func(k string) string {
				if k == "DEMO_EXIT" {
					return tc.env
				}
				return ""
			}
			var stderr bytes.Buffer
			opts, err := parseFlags(tc.args, getenv, &stderr)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect(stderr.String()).NotTo(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(opts.exit).To(Equal(tc.exit))
		})
	}
}

// TestFailedStepReportsCauseAndLogTail checks the failure report: one line
// of cause, however many lines the error had, then the log's last lines.
func TestFailedStepReportsCauseAndLogTail(t *testing.T) {
	g := NewWithT(t)
	logPath := filepath.Join(t.TempDir(), "x.log")
	var lines []string
	for i := range 100 {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	g.Expect(os.WriteFile(logPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600)).To(Succeed())

	ran := false
	var out bytes.Buffer
	err := runSteps(context.Background(), &out, []step{
		{name: "fail", run: func(context.Context) error { return errors.New("it broke\n  because") },
			logs: func() []string { return []string{logPath, filepath.Join(t.TempDir(), "absent.log")} }},
		{name: "never", run: func(context.Context) error { ran = true; return nil }},
	})
	g.Expect(err).To(MatchError(ContainSubstring("it broke")))
	g.Expect(ran).To(BeFalse())
	g.Expect(out.String()).To(ContainSubstring("FAILED: fail: it broke because\n"))
	g.Expect(out.String()).To(ContainSubstring("line 99\n"))
	g.Expect(out.String()).To(ContainSubstring("line 75\n"))
	g.Expect(out.String()).NotTo(ContainSubstring("line 74\n"))
	g.Expect(out.String()).NotTo(ContainSubstring("absent.log"))
}

func TestInterruptedStepIsNotAFailure(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	err := runSteps(ctx, &out, []step{{name: "wait", run: func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}})
	g.Expect(err).To(MatchError(errInterrupted))
	g.Expect(out.String()).NotTo(ContainSubstring("FAILED"))
}

// TestSigningKeySigns checks the generated key end to end: the policy
// check accepts the Secret, reflux's write-back can sign with it, and the
// public key the summary points at verifies the signature.
func TestSigningKeySigns(t *testing.T) {
	g := NewWithT(t)
	key, err := testenv.NewSigningKey(authorName, "make demo", authorEmail)
	g.Expect(err).NotTo(HaveOccurred())
	data := map[string][]byte{policy.OpenPGPKeyField: key.Private}
	g.Expect(policy.CheckSigningKey(refluxv1.OpenPGPSigningKey, data)).To(Succeed())

	signer, err := signing.FromSecret(data)
	g.Expect(err).NotTo(HaveOccurred())
	commit := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nreflux: demo\n"
	sig, err := signer.Sign(strings.NewReader(commit))
	g.Expect(err).NotTo(HaveOccurred())

	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key.Public))
	g.Expect(err).NotTo(HaveOccurred())
	signerEntity, err := openpgp.CheckArmoredDetachedSignature(ring, strings.NewReader(commit), bytes.NewReader(sig), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signerEntity.Identities).To(HaveKey(ContainSubstring(authorEmail)))
}
