package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"sort"
	"strings"
)

// HTMLReport renders a run's figures as one self-contained HTML page: the
// printed summary, and a bar per numeric figure of each scenario (drawn
// with inline SVG, no scripts, no external assets).
func HTMLReport(title, summary string, figures map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><meta charset="utf-8"><title>%s</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}pre{background:#f4f4f4;padding:1em;overflow:auto}
td{padding:2px 8px;font-variant-numeric:tabular-nums}h2{margin-top:2em}</style><h1>%s</h1>`, html.EscapeString(title), html.EscapeString(title))
	fmt.Fprintf(&b, "<h2>Summary</h2><pre>%s</pre>", html.EscapeString(summary))
	names := make([]string, 0, len(figures))
	for k := range figures {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, _ := json.Marshal(figures[name])
		var v any
		_ = json.Unmarshal(raw, &v)
		var leaves []leaf
		flatten("", v, &leaves)
		if len(leaves) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<h2>%s</h2><table>", html.EscapeString(name))
		maxV := 0.0
		for _, l := range leaves {
			maxV = max(maxV, l.v)
		}
		for _, l := range leaves {
			w := 0.0
			if maxV > 0 {
				w = 400 * l.v / maxV
			}
			fmt.Fprintf(&b, `<tr><td>%s</td><td align=right>%.4g</td><td><svg width="410" height="14"><rect width="%.1f" height="12" fill="#3b6ea8"/></svg></td></tr>`,
				html.EscapeString(l.k), l.v, w)
		}
		b.WriteString("</table>")
	}
	return b.String()
}

type leaf struct {
	k string
	v float64
}

func flatten(prefix string, v any, out *[]leaf) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flatten(strings.TrimPrefix(prefix+"."+k, "."), x[k], out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case float64:
		*out = append(*out, leaf{prefix, x})
	}
}
