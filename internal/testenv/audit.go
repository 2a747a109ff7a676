package testenv

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AuditWebhook configures kube-apiserver to send audit events to a webhook.
type AuditWebhook struct {
	// URL receives the batched audit.k8s.io/v1 EventList posts. When empty
	// the environment reserves a loopback port, exposes it as
	// Env.AuditWebhookAddr, and uses http://<addr>/audit, so a test can
	// start its receiver after the apiserver.
	URL string
	// Level is the audit level for write verbs: Metadata, Request or
	// RequestResponse. Defaults to Request, which carries the patch or
	// object a writer sent.
	Level string
	// BatchMaxWait bounds how long the apiserver holds events before
	// sending them. Defaults to 200ms so tests see events promptly.
	BatchMaxWait time.Duration
	// Reads also logs lists and watches, at Metadata: how a test counts
	// the watch connections a client opens.
	Reads bool
	// Token, when set, is the bearer token the apiserver sends with each
	// batch: how a receiver serving several apiservers tells them apart.
	// kube-apiserver sends it over HTTPS only: with no URL, the
	// environment makes the receiver a certificate (Env.AuditWebhookTLS)
	// and uses https://<addr>/audit.
	Token string
	// CA is the PEM certificate that verifies an https URL's receiver.
	CA []byte
}

// auditEndpoint is where the apiserver sends its audit events.
type auditEndpoint struct {
	url, addr string
	// tls is the receiver's certificate, when the environment made one.
	tls *AuditTLS
	// front holds addr, when the environment chose it.
	front *auditFront
}

// auditPolicy logs write verbs only. Leases and events are left out: they
// are written constantly by the control plane and say nothing about drift.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
# Secrets at Metadata, as the Kubernetes audit documentation advises: a
# Request-level event would carry their data. Reads too, so that a test
# can show who read a Secret (Env.AuditEvents).
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: ""
    resources: ["events"]
  - group: events.k8s.io
    resources: ["events"]
- level: %s
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
%s- level: None
`

// auditReads is the rule of AuditWebhook.Reads.
const auditReads = `- level: Metadata
  verbs: ["list", "watch"]
`

// auditLogFile is the apiserver's audit log, in the environment's dir.
const auditLogFile = "audit.log"

// AuditEvents returns the events of the apiserver's audit log that match,
// in order. The log has every write, and every request for a Secret.
func (e *Env) AuditEvents(match func(auditv1.Event) bool) ([]auditv1.Event, error) {
	if e.opts.AuditWebhook == nil {
		return nil, errors.New("the environment has no audit log: set Options.AuditWebhook")
	}
	f, err := os.Open(filepath.Join(e.Dir, auditLogFile))
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("decoding the audit log: %w", err)
		}
		if match(ev) {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// auditWebhookConfig is the kubeconfig kube-apiserver reads to find the
// webhook. Plain HTTP is accepted for a loopback test receiver.
const auditWebhookConfig = `apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s
contexts:
- name: audit
  context:
    cluster: audit
    user: audit
current-context: audit
users:
- name: audit
%s`

// auditCA is the webhook kubeconfig's cluster line for ca, following the
// server line.
func auditCA(ca []byte) string {
	if len(ca) == 0 {
		return ""
	}
	return "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca)
}

// auditUser is the webhook kubeconfig's user entry for token.
func auditUser(token string) string {
	if token == "" {
		return ""
	}
	return "  user:\n    token: " + token + "\n"
}

// configureAudit writes the policy and webhook files into dir and sets the
// matching kube-apiserver flags. When the caller gave no URL, it holds an
// address of its own (auditFront) and returns it.
func configureAudit(api *envtest.APIServer, dir string, opts AuditWebhook) (auditEndpoint, error) {
	ep := auditEndpoint{url: opts.URL}
	if ep.url == "" {
		front, err := listenAuditFront()
		if err != nil {
			return ep, err
		}
		ep.front, ep.addr = front, front.addr()
		ep.url = "http://" + ep.addr + "/audit"
		if opts.Token != "" {
			if ep.tls, err = newAuditTLS(dir); err != nil {
				return ep, errors.Join(err, front.close())
			}
			ep.url = "https://" + ep.addr + "/audit"
			opts.CA = ep.tls.CA
		}
	}
	level := opts.Level
	if level == "" {
		level = "Request"
	}
	wait := opts.BatchMaxWait
	if wait <= 0 {
		wait = 200 * time.Millisecond
	}
	policyPath := filepath.Join(dir, "audit-policy.yaml")
	reads := ""
	if opts.Reads {
		reads = auditReads
	}
	if err := os.WriteFile(policyPath, fmt.Appendf(nil, auditPolicy, level, reads), 0o600); err != nil {
		return ep, fmt.Errorf("writing audit policy: %w", err)
	}
	webhookPath := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := os.WriteFile(webhookPath, fmt.Appendf(nil, auditWebhookConfig, ep.url+auditCA(opts.CA), auditUser(opts.Token)), 0o600); err != nil {
		return ep, fmt.Errorf("writing audit webhook config: %w", err)
	}
	args := api.Configure()
	args.Set("audit-policy-file", policyPath)
	args.Set("audit-webhook-config-file", webhookPath)
	args.Set("audit-webhook-mode", "batch")
	args.Set("audit-webhook-batch-max-wait", wait.String())
	// The log backend too, blocking: an event is in the file before its
	// request returns, so a test can assert a request was never made.
	args.Set("audit-log-path", filepath.Join(dir, auditLogFile))
	args.Set("audit-log-format", "json")
	args.Set("audit-log-mode", "blocking")
	// The default 10s backoff would delay events for the whole test after
	// the receiver starts late; retry quickly instead.
	args.Set("audit-webhook-initial-backoff", "100ms")
	return ep, nil
}
