package branch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const (
	// DefaultPrefix is the prefix used when the caller configures none.
	DefaultPrefix = "reflux/"
	// NeedsDecision marks the last segment of Alert-kind branches.
	NeedsDecision = "needs-decision-"

	// maxSlug bounds "<namespace>-<name>"; Kubernetes names alone may be
	// 253 bytes, which would not fit MaxLength.
	maxSlug = 64
	// shortLen is how much of the drift fingerprint shows in the name:
	// 48 bits, enough to tell drift sets of one Kustomization apart.
	shortLen = 12
)

// Spec identifies one write-back branch.
type Spec struct {
	// Prefix fences reflux's branches, e.g. "reflux/".
	Prefix string
	// Namespace and Name identify the Kustomization whose drift is fixed.
	Namespace, Name string
	// Fingerprint identifies the drift set; only a short form is used.
	Fingerprint string
	// NeedsDecision marks Alert-kind changes that a human must decide on.
	NeedsDecision bool
}

// Name returns the branch name for s.
func Name(s Spec) (string, error) {
	if s.Fingerprint == "" {
		return "", fmt.Errorf("%w: empty fingerprint", ErrInvalidName)
	}
	family, err := Family(s)
	if err != nil {
		return "", err
	}
	name := family + Short(s.Fingerprint)
	if err := Validate(name); err != nil {
		return "", err
	}
	return name, nil
}

// Family returns the common start of every branch for the Kustomization and
// kind in s, regardless of fingerprint. Listing the remote under it finds
// an open branch after a restart without any in-memory state.
func Family(s Spec) (string, error) {
	if err := ValidatePrefix(s.Prefix); err != nil {
		return "", err
	}
	if s.Namespace == "" || s.Name == "" {
		return "", fmt.Errorf("%w: Kustomization namespace and name are required", ErrInvalidName)
	}
	family := s.Prefix + Slug(s.Namespace, s.Name) + "/"
	if s.NeedsDecision {
		family += NeedsDecision
	}
	return family, nil
}

// Short returns the fingerprint as it appears in branch names: its first
// hex digits when it already is a hex digest (optionally "algo:"-prefixed),
// otherwise a digest of it, so arbitrary caller strings stay ref-safe.
func Short(fingerprint string) string {
	fp := fingerprint
	if i := strings.LastIndexByte(fp, ':'); i >= 0 {
		fp = fp[i+1:]
	}
	if len(fp) >= shortLen && isLowerHex(fp) {
		return fp[:shortLen]
	}
	sum := sha256.Sum256([]byte(fingerprint))
	return hex.EncodeToString(sum[:])[:shortLen]
}

// Slug turns a namespace and name into one safe ref component, cut to a
// bounded length. A cut slug ends in a digest of the full pair so two long
// names sharing a start still get different branches.
func Slug(namespace, name string) string {
	slug := sanitize(namespace) + "-" + sanitize(name)
	if len(slug) <= maxSlug {
		return slug
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	head := strings.TrimRight(slug[:maxSlug-9], ".-")
	return head + "-" + hex.EncodeToString(sum[:])[:8]
}

// sanitize keeps the characters Kubernetes allows in names and maps
// anything else to '-', so hostile input cannot add ref syntax.
func sanitize(s string) string {
	var b strings.Builder
	prev := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case c == '.' && prev != '.':
		default:
			c = '-'
		}
		b.WriteByte(c)
		prev = c
	}
	out := strings.TrimSuffix(b.String(), ".lock")
	out = strings.Trim(out, ".-")
	if out == "" {
		return "x"
	}
	return out
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Info is what a branch name tells about itself.
type Info struct {
	// Slug is the "<namespace>-<name>" component.
	Slug string
	// Short is the short fingerprint.
	Short string
	// NeedsDecision is true for Alert-kind branches.
	NeedsDecision bool
}

// Parse splits a reflux branch name under prefix back into its parts.
func Parse(prefix, name string) (Info, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return Info{}, err
	}
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q is not under %q", ErrOutsidePrefix, name, prefix)
	}
	slug, last, ok := strings.Cut(rest, "/")
	if !ok || slug == "" || last == "" || strings.Contains(last, "/") {
		return Info{}, fmt.Errorf("%w: %q is not a reflux branch", ErrInvalidName, name)
	}
	info := Info{Slug: slug, Short: last}
	if s, ok := strings.CutPrefix(last, NeedsDecision); ok {
		info.Short, info.NeedsDecision = s, true
	}
	return info, nil
}
