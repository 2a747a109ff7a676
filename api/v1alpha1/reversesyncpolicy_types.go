package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReverseSyncPolicyKind is the kind of ReverseSyncPolicy.
const ReverseSyncPolicyKind = "ReverseSyncPolicy"

// ReverseSyncPolicySpec says which Kustomizations reflux governs in this
// namespace, how their drift is classified, and how it is written to Git.
type ReverseSyncPolicySpec struct {
	// KustomizationSelector selects the Flux Kustomizations in this
	// namespace that the policy governs. A selected Kustomization is governed
	// only when it also carries the annotation `reflux.dev/reverse-sync:
	// enabled`. An empty selector selects every opted-in Kustomization.
	// +required
	KustomizationSelector metav1.LabelSelector `json:"kustomizationSelector"`

	// Git says how reflux writes branches to the source repository.
	// +required
	Git GitSpec `json:"git"`

	// Rules classify drifted fields. They are evaluated in order and the
	// first rule that matches a field decides its action and severity. When
	// no rule matches, the built-in defaults apply (see Defaults).
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	Rules []Rule `json:"rules,omitempty"`

	// ManualHotfix names the annotation that marks a live object as a
	// deliberate manual hotfix. Such objects are logged, reported with a
	// Normal event and held, and never written to Git.
	// +kubebuilder:default={key: "ops.source", value: "manual"}
	// +optional
	ManualHotfix ManualHotfix `json:"manualHotfix,omitempty"`

	// Defaults tune the classification applied when no rule matches.
	// +optional
	Defaults Defaults `json:"defaults,omitempty"`

	// IgnoredManagers lists field managers whose writes are never drift,
	// such as an autoscaler that owns spec.replicas. Matching is exact.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	IgnoredManagers []string `json:"ignoredManagers,omitempty"`

	// Suspend stops reflux from acting on the Kustomizations this policy
	// governs. Existing holds stay until released.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Hold says whether reflux may hold objects at all. `Rules` (the
	// default) holds as each rule's hold says. `Never` never writes a live
	// object: drift is recorded and Flux reverts it as usual, and holds
	// reflux placed earlier are released. With git.reportOnly it is the
	// read-only profile, which needs no write access to workloads.
	// +kubebuilder:validation:Enum=Rules;Never
	// +kubebuilder:default=Rules
	// +optional
	Hold HoldMode `json:"hold,omitempty"`
}

// HoldMode says whether a policy may hold objects.
type HoldMode string

const (
	// HoldRules holds as each rule's hold says.
	HoldRules HoldMode = "Rules"
	// HoldNever never holds: reflux never writes a live object.
	HoldNever HoldMode = "Never"
)

// GitSpec configures the branches reflux pushes.
type GitSpec struct {
	// Author is the author and committer of reflux's commits.
	// +required
	Author CommitAuthor `json:"author"`

	// SigningKey signs every commit. The Secret holds `git.asc` (and an
	// optional `passphrase`) for openpgp, in the format Flux's
	// image-automation-controller uses, or `git.ssh` for ssh.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`

	// BranchPrefix starts the name of every branch reflux pushes. It must be
	// one or more path segments ending in "/" so that reflux's branches live
	// in a ref directory of their own and can never name the source branch.
	// +kubebuilder:default="reflux/"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9][A-Za-z0-9._-]*/)+$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.contains('.lock/')",message="branchPrefix must not contain '..' or a segment ending in '.lock'"
	// +kubebuilder:validation:XValidation:rule="!['main/','master/','trunk/','develop/','HEAD/','refs/'].exists(b, self.startsWith(b))",message="branchPrefix must not start with a source branch name such as main/ or master/, nor with refs/ or HEAD/"
	// +optional
	BranchPrefix string `json:"branchPrefix,omitempty"`

	// CommitMessageTemplate is a Go text/template for the commit message.
	// Empty means reflux's default: one line per field with the object,
	// pointer, Git and live values, origin, modifier, first seen and
	// severity.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	CommitMessageTemplate string `json:"commitMessageTemplate,omitempty"`

	// ReportOnly never writes Git: drift is recorded and reported only.
	// +optional
	ReportOnly bool `json:"reportOnly,omitempty"`

	// AlertBranches controls the prefilled branch pushed for Alert-action
	// fields. `Separate` (the default) pushes it beside the Merge branch,
	// marked as needing a decision; `None` only reports them.
	// +kubebuilder:validation:Enum=Separate;None
	// +kubebuilder:default=Separate
	// +optional
	AlertBranches string `json:"alertBranches,omitempty"`

	// AllowSharedWrites lets reflux edit a source document that more than
	// one rendered object or overlay uses. When false (the default) the
	// change is written to the overlay that renders the drifted object.
	// +optional
	AllowSharedWrites bool `json:"allowSharedWrites,omitempty"`

	// AddChartDefaults lets reflux propose a field a chart renders from its
	// own values.yaml, which no values in Git set (origin chart-default),
	// as a new key under the HelmRelease's spec.values, with the maps above
	// it. When false (the default) such a field is refused, naming the key
	// to add: the key then overrides the chart's default at every later
	// chart version, which a reviewer should choose knowingly.
	// +optional
	AddChartDefaults bool `json:"addChartDefaults,omitempty"`

	// Encryption lists the SOPS recipients used to encrypt Secret data that
	// reflux writes. Without recipients, Secret drift is never written. The
	// Kustomization must decrypt with SOPS (spec.decryption.provider: sops),
	// and the Secret must be a plain, single-document resource file, which
	// reflux rewrites encrypted with the live values.
	// +optional
	Encryption *Encryption `json:"encryption,omitempty"`

	// PullRequest opens one pull request per branch reflux pushes, on the
	// forge that hosts the repository. Without it, branches are pushed and
	// a reviewer opens the pull request by hand.
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`
}

// Provider is a forge whose API reflux opens pull requests on.
// +kubebuilder:validation:Enum=github;gitlab;gitea;bitbucketserver;bitbucket;azuredevops
type Provider string

const (
	// GitHubProvider is github.com or GitHub Enterprise.
	GitHubProvider Provider = "github"
	// GitLabProvider is gitlab.com or a self-managed GitLab.
	GitLabProvider Provider = "gitlab"
	// GiteaProvider is a Gitea (or Forgejo) server.
	GiteaProvider Provider = "gitea"
	// BitbucketServerProvider is Bitbucket Server (Data Center): its token
	// is an HTTP access token, and apiURL its base URL.
	BitbucketServerProvider Provider = "bitbucketserver"
	// BitbucketCloudProvider is bitbucket.org: its token is an access
	// token, or USERNAME:APP_PASSWORD, and reviewers are account ids.
	BitbucketCloudProvider Provider = "bitbucket"
	// AzureDevOpsProvider is Azure DevOps Services or Server: its token is
	// a personal access token, reviewers are identity ids, and apiURL,
	// needed on a server only, is the collection URL.
	AzureDevOpsProvider Provider = "azuredevops"
)

// PullRequestTokenKey is the key of the API token in the pull-request
// Secret.
const PullRequestTokenKey = "token"

// PullRequestSpec says where and how reflux opens pull requests.
// +kubebuilder:validation:XValidation:rule="self.provider != 'gitea' || has(self.apiURL)",message="pullRequest.apiURL is required for provider gitea: Gitea has no public default host"
// +kubebuilder:validation:XValidation:rule="self.provider != 'bitbucketserver' || has(self.apiURL)",message="pullRequest.apiURL is required for provider bitbucketserver: the server's base URL"
type PullRequestSpec struct {
	// Provider is the forge: github, gitlab, gitea, bitbucketserver
	// (Bitbucket Server or Data Center, which has no pull-request labels
	// or assignees; its token is an HTTP access token), bitbucket
	// (Bitbucket Cloud, without labels or assignees either; its token is
	// an access token or USERNAME:APP_PASSWORD, and its reviewers are
	// account ids) or azuredevops (Azure DevOps, which has no assignees;
	// its token is a personal access token, and its reviewers are
	// identity ids).
	// +required
	Provider Provider `json:"provider"`

	// SecretRef names a Secret in the policy's namespace whose `token` key
	// holds an API token allowed to open pull requests, label them and
	// request reviews.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// APIURL is the base URL of a self-hosted forge, such as
	// `https://gitea.example.com` or `https://github.example.com/api/v3`.
	// Empty means github.com or gitlab.com. For Azure DevOps it is the
	// organisation or collection URL, such as
	// `https://ado.example.com/tfs/DefaultCollection`; empty means the one
	// the repository URL names on dev.azure.com.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+(/[^\s]*)?$`
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// Reviewers are requested on every pull request, unless a rule's
	// override applies.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	Reviewers []string `json:"reviewers,omitempty"`

	// Assignees are assigned every pull request, unless a rule's override
	// applies.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	Assignees []string `json:"assignees,omitempty"`
}

// PullRequestOverride replaces the policy's reviewers and assignees for
// the pull requests that carry a field the rule matched.
type PullRequestOverride struct {
	// Reviewers requested instead of the policy's.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	Reviewers []string `json:"reviewers,omitempty"`

	// Assignees assigned instead of the policy's.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	Assignees []string `json:"assignees,omitempty"`
}

// CommitAuthor is a git identity.
type CommitAuthor struct {
	// Name of the author.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`

	// Email of the author.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+$`
	// +required
	Email string `json:"email"`
}

// SigningKeyType is the kind of key that signs commits.
// +kubebuilder:validation:Enum=openpgp;ssh
type SigningKeyType string

const (
	// OpenPGPSigningKey signs with an armored OpenPGP key (`git.asc`).
	OpenPGPSigningKey SigningKeyType = "openpgp"
	// SSHSigningKey signs with an SSH key (`identity`), as git's
	// gpg.format=ssh does.
	SSHSigningKey SigningKeyType = "ssh"
)

// SigningKey references the Secret holding the commit signing key.
type SigningKey struct {
	// SecretRef names a Secret in the policy's namespace.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// Type of the key.
	// +kubebuilder:default=openpgp
	// +optional
	Type SigningKeyType `json:"type,omitempty"`
}

// Encryption lists SOPS recipients.
// +kubebuilder:validation:XValidation:rule="(has(self.age) && size(self.age) > 0) || (has(self.pgp) && size(self.pgp) > 0)",message="encryption needs at least one age or pgp recipient"
type Encryption struct {
	// Age recipients (age1...).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^age1[0-9a-z]+$`
	// +listType=set
	// +optional
	Age []string `json:"age,omitempty"`

	// PGP recipients as ASCII-armored OpenPGP public keys. reflux holds no
	// keyring, so the keys themselves are given, not fingerprints.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=65536
	// +kubebuilder:validation:items:Pattern=`^\s*-----BEGIN PGP PUBLIC KEY BLOCK-----`
	// +listType=set
	// +optional
	PGP []string `json:"pgp,omitempty"`
}

// ExpiryAction is what reflux does when a hold reaches its maximum age.
// +kubebuilder:validation:Enum=Alert;Release
type ExpiryAction string

const (
	// ExpiryAlert keeps holding and raises a Warning event marked for
	// paging: a person decides.
	ExpiryAlert ExpiryAction = "Alert"
	// ExpiryRelease releases the hold, so Flux restores Git's value at its
	// next reconcile (which reflux requests at once).
	ExpiryRelease ExpiryAction = "Release"
)

// ManualHotfix names the annotation that marks a manual hotfix, and bounds
// how long a hold may stand.
type ManualHotfix struct {
	// Key of the annotation.
	// +kubebuilder:default="ops.source"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`

	// Value of the annotation.
	// +kubebuilder:default="manual"
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`

	// MaxAge bounds how long a manual hotfix is held, counted from the
	// hold (the record's status.heldSince), such as `72h`. When it is
	// reached, reflux raises a Warning event marked for paging, counts the
	// hold in reflux_hold_expired, and then does what OnExpiry says. Unset
	// means a manual hotfix is held until its record is dismissed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="manualHotfix.maxAge must be at least 1s"
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`

	// OnExpiry is what happens to a hold that reached its maximum age
	// (this MaxAge, or a rule's holdFor): `Alert` (the default) keeps
	// holding and pages, `Release` releases the hold so that Flux restores
	// Git, and closes the record as Expired.
	// +kubebuilder:default=Alert
	// +optional
	OnExpiry ExpiryAction `json:"onExpiry,omitempty"`

	// FromGroups declares a manual hotfix from the audit log: a drift whose
	// audited writer is in one of these groups (such as
	// `oncall-breakglass`) is a manual hotfix even without the annotation,
	// and reflux adds the annotation to the live object itself. Needs the
	// audit webhook (--audit-addr).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	FromGroups []string `json:"fromGroups,omitempty"`

	// FromUsers declares a manual hotfix from the audit log by username,
	// as FromGroups does by group. Matching is exact.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	FromUsers []string `json:"fromUsers,omitempty"`
}

// Defaults tune the built-in classification applied when no rule matches:
// a new ConfigMap key merges, an image or securityContext change is an
// Alert of high severity, a resource request or limit at least
// ResourceFactor times the declared value is a critical Alert, and a
// replicas change is a low Alert.
type Defaults struct {
	// Disabled turns the built-in defaults off: a field no rule matches is
	// then reported as an Alert of medium severity.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// ResourceFactor is how many times the declared value a resource
	// request or limit must reach to be critical.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	// +optional
	ResourceFactor int32 `json:"resourceFactor,omitempty"`
}

// Action is what reflux does with a drifted field.
// +kubebuilder:validation:Enum=Merge;Alert;Ignore
type Action string

const (
	// MergeAction writes the live value to a branch for review.
	MergeAction Action = "Merge"
	// AlertAction reports the drift with its severity and pushes a prefilled
	// branch that reflux never merges.
	AlertAction Action = "Alert"
	// IgnoreAction only logs the drift.
	IgnoreAction Action = "Ignore"
)

// Severity grades a drifted field.
// +kubebuilder:validation:Enum=low;medium;high;critical
type Severity string

const (
	// SeverityLow is for routine changes such as replicas.
	SeverityLow Severity = "low"
	// SeverityMedium is the default for unclassified drift.
	SeverityMedium Severity = "medium"
	// SeverityHigh is for image and securityContext changes.
	SeverityHigh Severity = "high"
	// SeverityCritical pages: for example a limit raised 4x.
	SeverityCritical Severity = "critical"
)

// ChangeType says how a field diverges from Git.
// +kubebuilder:validation:Enum=Add;Update;Remove
type ChangeType string

const (
	// ChangeAdd is a field present live and absent in Git.
	ChangeAdd ChangeType = "Add"
	// ChangeUpdate is a field whose live value differs from Git's, or, at
	// WholeObjectPointer, a declared object written live whose content
	// reflux does not read (a Secret under --secrets=metadata).
	ChangeUpdate ChangeType = "Update"
	// ChangeRemove is a field declared in Git and absent live, or, at
	// WholeObjectPointer, a declared object deleted live.
	ChangeRemove ChangeType = "Remove"
)

// WholeObjectPointer is the JSON pointer of a whole object (RFC 6901's
// empty pointer): a Remove at it is a live object someone deleted while
// the applied revision declares it, an Update one written whose content
// reflux does not read.
const WholeObjectPointer = ""

// DeletesObject reports whether the field records its whole object
// deleted live.
func (f DriftField) DeletesObject() bool {
	return f.Pointer == WholeObjectPointer && f.ChangeType == ChangeRemove
}

// ContentUnknown reports whether the field records its whole object
// written live, from the audit log, without reflux reading what changed.
func (f DriftField) ContentUnknown() bool {
	return f.Pointer == WholeObjectPointer && f.ChangeType == ChangeUpdate
}

// Rule classifies the drifted fields it matches. Every criterion that is
// set must match; within one criterion, any entry may match.
// +kubebuilder:validation:XValidation:rule="has(self.paths) || has(self.kinds) || has(self.fields) || has(self.changeTypes)",message="a rule must match on at least one of paths, kinds, fields or changeTypes"
type Rule struct {
	// Name identifies the rule in events and records.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Name string `json:"name,omitempty"`

	// Paths are globs (path.Match syntax) over the origin file, relative to
	// the repository root, such as `apps/*/flags.yaml`. A field a Helm
	// chart renders matches by its values file or by the file that
	// declares its HelmRelease.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	// +optional
	Paths []string `json:"paths,omitempty"`

	// Kinds of the drifted object, such as `ConfigMap`.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +listType=atomic
	// +optional
	Kinds []string `json:"kinds,omitempty"`

	// Fields are JSON-pointer patterns into the object, where `*` stands
	// for exactly one segment: `/spec/template/spec/containers/*/image`.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^(/(\*|([^/~*]|~[01])+))+$`
	// +listType=atomic
	// +optional
	Fields []string `json:"fields,omitempty"`

	// ChangeTypes the rule applies to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +optional
	ChangeTypes []ChangeType `json:"changeTypes,omitempty"`

	// Action for the matched fields.
	// +required
	Action Action `json:"action"`

	// Severity of the matched fields. Defaults to medium.
	// +optional
	Severity Severity `json:"severity,omitempty"`

	// Hold keeps Flux from reverting the object while the drift is open.
	// Defaults to true; set false to let Flux revert as usual while the
	// Drift record keeps the evidence.
	// +optional
	Hold *bool `json:"hold,omitempty"`

	// HoldFor bounds how long a hold this rule asks for may stand, counted
	// from the hold (the record's status.heldSince), such as `72h`. A
	// record held for several fields expires at the shortest holdFor among
	// them; fields whose rule sets none do not bound it. What happens then
	// is the policy's spec.manualHotfix.onExpiry. Unset means no limit.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="holdFor must be at least 1s"
	// +optional
	HoldFor *metav1.Duration `json:"holdFor,omitempty"`

	// PullRequest overrides the policy's reviewers and assignees for pull
	// requests carrying a field this rule matched: a rule over
	// `apps/payments/**` can request the payments team.
	// +optional
	PullRequest *PullRequestOverride `json:"pullRequest,omitempty"`
}

// ReverseSyncPolicyStatus is the observed state of a ReverseSyncPolicy.
type ReverseSyncPolicyStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions holds Ready and Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Kustomizations is the number of Kustomizations the policy governs.
	// +optional
	Kustomizations int32 `json:"kustomizations,omitempty"`

	// DriftedObjects is the number of live objects with open drift.
	// +optional
	DriftedObjects int32 `json:"driftedObjects"`

	// Drift is a bounded summary of the open drift records.
	// +optional
	Drift *DriftReport `json:"drift,omitempty"`

	// PendingBranches are branches reflux pushed that await review.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	PendingBranches []PendingBranch `json:"pendingBranches,omitempty"`
}

// DriftReport summarises open drift. Entries are bounded; Overflow counts
// the records left out.
type DriftReport struct {
	// BySeverity counts drifted fields per severity.
	// +optional
	BySeverity map[Severity]int32 `json:"bySeverity,omitempty"`

	// ByAction counts drifted fields per action.
	// +optional
	ByAction map[Action]int32 `json:"byAction,omitempty"`

	// Entries lists the most severe open records first.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Entries []DriftSummary `json:"entries,omitempty"`

	// Overflow is the number of records not listed in Entries.
	// +optional
	Overflow int32 `json:"overflow,omitempty"`
}

// DriftSummary is one line of the policy's drift report.
type DriftSummary struct {
	// Record is the name of the Drift record.
	Record string `json:"record"`
	// Kustomization is the governing Kustomization's name.
	Kustomization string `json:"kustomization"`
	// Object is `Kind/namespace/name`.
	Object string `json:"object"`
	// Fields is the number of drifted fields.
	Fields int32 `json:"fields"`
	// Severity is the highest field severity; empty while the record is
	// Pending, before a render says which fields drift.
	// +optional
	Severity Severity `json:"severity,omitempty"`
	// State of the record.
	State DriftState `json:"state"`
	// HeldSince is when the hold was applied, if held.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`
}

// PendingBranch is a branch pushed by reflux and not yet merged or closed.
type PendingBranch struct {
	// Kustomization is the governing Kustomization's name.
	Kustomization string `json:"kustomization"`
	// Branch is the branch name.
	Branch string `json:"branch"`
	// Commit is the branch head reflux pushed.
	Commit string `json:"commit"`
	// Action is Merge or Alert.
	Action Action `json:"action"`
	// PushedAt is when the branch was last pushed.
	PushedAt metav1.Time `json:"pushedAt"`
	// PullRequest is the URL of the branch's pull request, when reflux
	// opened one.
	// +optional
	PullRequest string `json:"pullRequest,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ReverseSyncPolicy) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions sets the status conditions.
func (in *ReverseSyncPolicy) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rsp
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Drifted",type="integer",JSONPath=".status.driftedObjects"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// ReverseSyncPolicy governs reverse sync for the Flux Kustomizations it
// selects in its namespace.
type ReverseSyncPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReverseSyncPolicySpec   `json:"spec,omitempty"`
	Status ReverseSyncPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ReverseSyncPolicyList is a list of ReverseSyncPolicy.
type ReverseSyncPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReverseSyncPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReverseSyncPolicy{}, &ReverseSyncPolicyList{})
}
