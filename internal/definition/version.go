package definition

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrBadVersion is matched (errors.Is) by CheckVersion's error and by
// Resolve's when the release version is not a valid version.
var ErrBadVersion = errors.New("not a valid version")

// VersionError says which version was refused; it quotes at most a short
// prefix of it, however long the input was.
type VersionError struct {
	// Version is the refused version, whole.
	Version string
}

// versionQuoteMax is how many characters of a refused version an error quotes.
const versionQuoteMax = 40

// Error quotes the version (at most its first 40 characters) and says what a
// version may hold.
func (e *VersionError) Error() string {
	return fmt.Sprintf("%s is %v; use letters, digits, '_', '.', '-' (at most 128, as a Docker tag), e.g. v2 or 1.4.0",
		quotePrefix(e.Version, versionQuoteMax), ErrBadVersion)
}

// Unwrap matches ErrBadVersion and ErrInvalid.
func (e *VersionError) Unwrap() []error { return []error{ErrBadVersion, ErrInvalid} }

// CheckVersion returns a *VersionError when v cannot be a release version:
// it becomes a Docker tag and MYTHEX_VERSION, so it is 1–128 of letters,
// digits, '_', '.' and '-', not starting with '.' or '-'.
func CheckVersion(v string) error {
	if !versionRE.MatchString(v) {
		return &VersionError{Version: v}
	}
	return nil
}

// quotePrefix quotes s, cut to its first max runes with "…" and its length
// when longer.
func quotePrefix(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q… (%d characters)", string(r[:max]), len(r))
}
