package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

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
}

// auditPolicy logs write verbs only. Leases and events are left out: they
// are written constantly by the control plane and say nothing about drift.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
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
- level: None
`

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
`

// configureAudit writes the policy and webhook files into dir and sets the
// matching kube-apiserver flags. It returns the reserved address when the
// caller gave no URL.
func configureAudit(api *envtest.APIServer, dir string, opts AuditWebhook) (string, string, error) {
	url, addr := opts.URL, ""
	if url == "" {
		addrs, err := freeAddrs(1)
		if err != nil {
			return "", "", err
		}
		addr = addrs[0]
		url = "http://" + addr + "/audit"
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
	if err := os.WriteFile(policyPath, fmt.Appendf(nil, auditPolicy, level), 0o600); err != nil {
		return "", "", fmt.Errorf("writing audit policy: %w", err)
	}
	webhookPath := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := os.WriteFile(webhookPath, fmt.Appendf(nil, auditWebhookConfig, url), 0o600); err != nil {
		return "", "", fmt.Errorf("writing audit webhook config: %w", err)
	}
	args := api.Configure()
	args.Set("audit-policy-file", policyPath)
	args.Set("audit-webhook-config-file", webhookPath)
	args.Set("audit-webhook-mode", "batch")
	args.Set("audit-webhook-batch-max-wait", wait.String())
	// The default 10s backoff would delay events for the whole test after
	// the receiver starts late; retry quickly instead.
	args.Set("audit-webhook-initial-backoff", "100ms")
	return url, addr, nil
}
