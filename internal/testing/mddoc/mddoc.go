// Package mddoc reads the project's Markdown documents for the tests that
// keep them true: their fenced code blocks (commands the README test runs,
// JSON the protocol tests decode, HTTP exchanges the service test
// replays), their links and their headings' anchors as GitHub makes them.
package mddoc

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Block is one fenced code block.
type Block struct {
	// Lang is the first word of the info string ("sh", "json"), Info all
	// of it.
	Lang, Info string
	// Line is the 1-based line of the opening fence.
	Line int
	// Text is the block's content, lines joined with "\n" and ending in one.
	Text string
}

var fenceRE = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")

// Blocks returns the fenced code blocks of a Markdown document, in order.
func Blocks(src string) []Block {
	var out []Block
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, info := m[1], strings.TrimSpace(m[2])
		b := Block{Info: info, Line: i + 1}
		if f := strings.Fields(info); len(f) > 0 {
			b.Lang = f[0]
		}
		var body strings.Builder
		for i++; i < len(lines); i++ {
			t := strings.TrimSpace(lines[i])
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				break
			}
			body.WriteString(lines[i])
			body.WriteByte('\n')
		}
		b.Text = body.String()
		out = append(out, b)
	}
	return out
}

// Prose returns the document without its fenced code blocks (each line
// of a block blanked, so line numbers hold) and without inline code spans.
func Prose(src string) string {
	lines := strings.Split(src, "\n")
	in := ""
	for i, l := range lines {
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			switch {
			case in == "":
				in = m[1]
				lines[i] = ""
				continue
			case strings.HasPrefix(strings.TrimSpace(l), in) && strings.Trim(strings.TrimSpace(l), in[:1]) == "":
				in = ""
				lines[i] = ""
				continue
			}
		}
		if in != "" {
			lines[i] = ""
			continue
		}
		lines[i] = stripCodeSpans(l)
	}
	return strings.Join(lines, "\n")
}

var codeSpanRE = regexp.MustCompile("(`+)[^`]*?(`+)")

// stripCodeSpans removes inline code spans from one line.
func stripCodeSpans(l string) string {
	return codeSpanRE.ReplaceAllString(l, "")
}

// Link is one link of a document's prose.
type Link struct {
	Line   int
	Target string // as written: a URL, a path, "#anchor", "path#anchor"
	Image  bool
}

var (
	inlineLinkRE = regexp.MustCompile(`(!?)\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	autoLinkRE   = regexp.MustCompile(`<((?:https?|ftp|mailto):[^>\s]+)>`)
	htmlLinkRE   = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*"([^"]+)"`)
	bareURLRE    = regexp.MustCompile(`\bhttps?://[^\s<>()\[\]` + "`" + `"']+`)
)

// Links returns every link of a document outside code: inline links and
// images, reference definitions, autolinks, HTML href and src, and bare
// URLs (which GitHub turns into links).
func Links(src string) []Link {
	var out []Link
	for i, l := range strings.Split(Prose(src), "\n") {
		line := i + 1
		rest := l
		for _, m := range inlineLinkRE.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: line, Target: m[2], Image: m[1] == "!"})
		}
		rest = inlineLinkRE.ReplaceAllString(rest, " ")
		if m := refDefRE.FindStringSubmatch(rest); m != nil {
			out = append(out, Link{Line: line, Target: m[1]})
			continue
		}
		for _, m := range autoLinkRE.FindAllStringSubmatch(rest, -1) {
			out = append(out, Link{Line: line, Target: m[1]})
		}
		rest = autoLinkRE.ReplaceAllString(rest, " ")
		for _, m := range htmlLinkRE.FindAllStringSubmatch(rest, -1) {
			out = append(out, Link{Line: line, Target: m[1]})
		}
		rest = htmlLinkRE.ReplaceAllString(rest, " ")
		for _, u := range bareURLRE.FindAllString(rest, -1) {
			out = append(out, Link{Line: line, Target: strings.TrimRight(u, ".,;:!?")})
		}
	}
	return out
}

var (
	headingRE  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlIDRE   = regexp.MustCompile(`(?i)<a\s+(?:name|id)\s*=\s*"([^"]+)"`)
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// Anchors returns the fragment names a document's headings get on GitHub
// (and any <a name> or <a id> it holds).
func Anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines := strings.Split(src, "\n")
	prose := strings.Split(Prose(src), "\n")
	for i := range lines {
		if prose[i] == "" && lines[i] != "" {
			continue // inside a code block
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(lines[i], -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		s := Slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Slug is the anchor GitHub gives a heading's text: the text as shown
// (code spans' content, links' text, no emphasis marks), lower case,
// without punctuation other than hyphens and underscores, spaces as
// hyphens.
func Slug(heading string) string {
	t := mdLinkText.ReplaceAllString(heading, "$1")
	t = strings.NewReplacer("`", "", "*", "").Replace(t)
	var b strings.Builder
	for _, r := range strings.ToLower(t) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
