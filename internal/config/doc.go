package config

import (
	_ "embed"
	"fmt"
	"strings"
)

// The prose around the tables.
var (
	//go:embed doc_head.md
	docHead string
	//go:embed doc_tail.md
	docTail string
)

// Markdown is docs/configuration.md: every setting as its declaration says
// (a test keeps the file current; `make docs` rewrites it).
func Markdown() string {
	var b strings.Builder
	b.WriteString(docHead)
	section := ""
	for _, s := range settings() {
		if s.section != "" && s.section != section {
			section = s.section
			fmt.Fprintf(&b, "\n## %s\n\n| variable | default | meaning |\n|---|---|---|\n", section)
		}
		name := "`" + s.env + "`"
		if s.secret {
			name += " *secret*"
		}
		def := "none"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		meaning := s.doc
		var notes []string
		if len(s.enum) > 0 {
			var values []string
			for _, v := range s.enum {
				if v != "" {
					values = append(values, "`"+v+"`")
				}
			}
			notes = append(notes, "one of "+strings.Join(values, ", "))
		}
		switch {
		case s.min != "" && s.max != "":
			notes = append(notes, fmt.Sprintf("%s to %s", s.min, s.max))
		case s.min != "" && s.min != "0" && s.min != "0s":
			notes = append(notes, "at least "+s.min)
		case s.max != "":
			notes = append(notes, "at most "+s.max)
		}
		if s.old != "" {
			notes = append(notes, "formerly `"+s.old+"`")
		}
		if len(notes) > 0 {
			meaning += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(meaning, "|", `\|`))
	}
	b.WriteString(docTail)
	return b.String()
}
