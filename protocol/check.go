package protocol

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
)

// Size limits of the protocol. The service's 1 MiB body limit bounds the
// total; these bound single fields so no one string can crowd out the rest.
const (
	MaxIDBytes    = 256       // ids, actor and replica names
	MaxTextBytes  = 64 << 10  // summaries, notes, descriptions
	MaxPatchBytes = 256 << 10 // ChangeTransaction.patch
	MaxListItems  = 10_000    // paths, patterns, files, labels
)

// checker accumulates the first validation failure.
type checker struct{ err *FieldError }

func (c *checker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = fieldErr(field, format, args...)
	}
}

func (c *checker) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// text checks a free-text field: valid UTF-8, at most max bytes, and present
// when required. Free text may hold newlines and tabs, not other controls.
func (c *checker) text(field, v string, max int, required bool) {
	switch {
	case v == "" && required:
		c.fail(field, "required")
	case len(v) > max:
		c.fail(field, "too long: %d bytes, at most %d", len(v), max)
	case !utf8.ValidString(v):
		c.fail(field, "not valid UTF-8")
	case strings.ContainsFunc(v, func(r rune) bool { return r != '\n' && r != '\t' && r != '\r' && unicode.IsControl(r) }):
		c.fail(field, "contains a control character")
	}
}

// id checks an identifier: 1 to MaxIDBytes bytes of UTF-8 without control
// characters or surrounding space, and unchanged by sanitize.Line: ids of
// other agents reach an agent as they are, so none may carry invisible,
// bidi or tag characters, or white space other than single inner spaces.
func (c *checker) id(field, v string, required bool) {
	switch {
	case v == "":
		if required {
			c.fail(field, "required")
		}
	case len(v) > MaxIDBytes:
		c.fail(field, "too long: %d bytes, at most %d", len(v), MaxIDBytes)
	case !utf8.ValidString(v):
		c.fail(field, "not valid UTF-8")
	case strings.ContainsFunc(v, unicode.IsControl):
		c.fail(field, "contains a control character")
	case strings.TrimSpace(v) != v:
		c.fail(field, "has leading or trailing space")
	case sanitize.Line(v, 0) != v:
		c.fail(field, "contains invisible, bidi or tag characters, or white space other than single spaces")
	}
}

// when checks a required time and normalizes it to UTC.
func (c *checker) when(field string, t *time.Time) {
	if t.IsZero() {
		c.fail(field, "required (an RFC 3339 UTC time)")
		return
	}
	*t = t.UTC()
}

// maybeWhen checks an optional time and normalizes it to UTC.
func (c *checker) maybeWhen(field string, t *time.Time) {
	if t != nil {
		c.when(field, t)
	}
}

// relPath checks a repository-relative path with forward slashes.
func (c *checker) relPath(field, p string) {
	switch {
	case p == "":
		c.fail(field, "empty path")
	case len(p) > 4096:
		c.fail(field, "path too long")
	case !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
		c.fail(field, "path is not printable UTF-8")
	case strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':'):
		c.fail(field, "path %q must be relative to the repository root", p)
	case strings.Contains(p, `\`):
		c.fail(field, "path %q must use / as separator", p)
	default:
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || seg == "." || seg == "" {
				c.fail(field, "path %q must be clean (no empty, . or .. segments)", p)
				return
			}
		}
	}
}

// glob checks a repository-relative glob pattern (`**` allowed).
func (c *checker) glob(field, p string) {
	c.relPath(field, p)
	if c.err == nil && !doublestar.ValidatePattern(p) {
		c.fail(field, "invalid glob pattern %q", p)
	}
}

// list checks that a list is present (when required) and not too long, and
// runs each on every item.
func list[T any](c *checker, field string, items []T, required, nonEmpty bool, each func(field string, item T)) {
	switch {
	case items == nil && required:
		c.fail(field, "required")
		return
	case len(items) == 0 && nonEmpty:
		c.fail(field, "must not be empty")
		return
	case len(items) > MaxListItems:
		c.fail(field, "too many items: %d, at most %d", len(items), MaxListItems)
		return
	}
	for i, it := range items {
		each(fmt.Sprintf("%s[%d]", field, i), it)
		if c.err != nil {
			return
		}
	}
}
