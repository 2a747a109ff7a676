package message

import (
	"fmt"
	"regexp"
	"strings"
)

// Trailer keys reflux writes. A commit is reflux's own only when it carries
// TrailerFingerprint and reflux's identity (see the writeback package).
const (
	TrailerFingerprint    = "Reflux-Fingerprint"
	TrailerKustomization  = "Reflux-Kustomization"
	TrailerKind           = "Reflux-Kind"
	TrailerNeedsDecision  = "Reflux-Needs-Decision"
	TrailerSourceRevision = "Reflux-Source-Revision"
)

// Trailer is one "Key: value" line of the final paragraph.
type Trailer struct {
	Key, Value string
}

var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// Compose joins a rendered body and reflux's trailers. Trailer values are
// escaped like template values, and the block is separated by a blank line
// so git-interpret-trailers(1) sees exactly these trailers.
func Compose(body string, trailers []Trailer) (string, error) {
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\n"))
	b.WriteString("\n\n")
	for _, t := range trailers {
		if !trailerKey.MatchString(t.Key) {
			return "", fmt.Errorf("%w: bad trailer key %q", ErrTemplate, t.Key)
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Key, Escape(t.Value))
	}
	return b.String(), nil
}

// ParseTrailers returns the trailers of the last paragraph of msg. Only a
// paragraph made entirely of "Key: value" lines counts, as in git.
func ParseTrailers(msg string) map[string][]string {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return nil
	}
	out := map[string][]string{}
	for _, line := range strings.Split(msg[i+2:], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !trailerKey.MatchString(k) {
			return nil
		}
		out[k] = append(out[k], v)
	}
	return out
}

// TrailerValue returns the single value of key in msg's trailers, or "".
func TrailerValue(msg, key string) string {
	vs := ParseTrailers(msg)[key]
	if len(vs) != 1 {
		return ""
	}
	return vs[0]
}
