package tools

import (
	"fmt"
	"strings"
)

// MarkdownTable renders the tool table of the README from the registry.
func MarkdownTable(list []Tool) string {
	var b strings.Builder
	b.WriteString("| tool | toolset | what it does | hints |\n| --- | --- | --- | --- |\n")
	for _, t := range list {
		var hints []string
		a := t.Def.Annotations
		if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
			hints = append(hints, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			hints = append(hints, "destructive")
		}
		if a.IdempotentHint != nil && *a.IdempotentHint {
			hints = append(hints, "idempotent")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Def.Name, t.Toolset, strings.ReplaceAll(t.Def.Description, "|", "\\|"), strings.Join(hints, ", "))
	}
	return b.String()
}
