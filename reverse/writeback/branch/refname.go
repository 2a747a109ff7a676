package branch

import (
	"fmt"
	"strings"
)

// MaxLength caps a full branch name. Git itself allows far longer refs,
// but hosted providers and filesystems (one ref is one file under
// .git/refs) get unhappy well before 255 bytes.
const MaxLength = 200

// Validate reports whether name is usable as a branch name, following the
// rules of git-check-ref-format(1) for "refs/heads/<name>".
func Validate(name string) error {
	if name == "" || len(name) > MaxLength {
		return fmt.Errorf("%w: %q: length must be 1..%d", ErrInvalidName, name, MaxLength)
	}
	if name == "@" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	for _, bad := range []string{"..", "@{", "//"} {
		if strings.Contains(name, bad) {
			return fmt.Errorf("%w: %q contains %q", ErrInvalidName, name, bad)
		}
	}
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") {
		return fmt.Errorf("%w: %q has a bad ending", ErrInvalidName, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Errorf("%w: %q contains %q", ErrInvalidName, name, r)
		}
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return fmt.Errorf("%w: %q has a bad component %q", ErrInvalidName, name, c)
		}
	}
	return nil
}

// ValidatePrefix checks a branch prefix such as "reflux/".
func ValidatePrefix(prefix string) error {
	if !strings.HasSuffix(prefix, "/") || len(prefix) > 64 {
		return fmt.Errorf("%w: %q must end in '/' and be at most 64 bytes", ErrInvalidPrefix, prefix)
	}
	if err := Validate(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPrefix, err)
	}
	return nil
}

// Check is the guard every push and delete goes through: name must be a
// valid branch name under prefix, and never the source branch.
func Check(prefix, source, name string) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	if err := Validate(name); err != nil {
		return err
	}
	if name == source || "refs/heads/"+name == source {
		return fmt.Errorf("%w: %q", ErrSourceBranch, name)
	}
	if !strings.HasPrefix(name, prefix) || len(name) == len(prefix) {
		return fmt.Errorf("%w: %q is not under %q", ErrOutsidePrefix, name, prefix)
	}
	return nil
}
