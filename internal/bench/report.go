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
	if on, ok := figures["onsale"].(map[string]any); ok {
		if r, ok := on["result"].(*OnsaleResult); ok && len(r.Timeline) > 1 {
			b.WriteString("<h2>On-sale timeline</h2>")
			series := func(name, color string, v func(Sample) float64) {
				b.WriteString(lineChart(name, color, r.Timeline, v))
			}
			series("seats available", "#3b6ea8", func(s Sample) float64 { return float64(s.Available) })
			series("requests queued (claim backlog)", "#c0392b", func(s Sample) float64 { return float64(s.Queued) })
			series("admitted through (waiting room)", "#27ae60", func(s Sample) float64 { return float64(s.Admitted) })
		}
	}
	if steps, ok := figures["accept"].(map[string]any); ok {
		if st, ok := steps["result"].([]HTTPAcceptStep); ok && len(st) > 0 {
			b.WriteString("<h2>Accept latency by concurrency</h2><table><tr><th>mode</th><th>conns</th><th>accepted/s</th><th>p50</th><th>p99</th><th>p999</th></tr>")
			for _, x := range st {
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%.0f</td><td>%.2f ms</td><td>%.2f ms</td><td>%.2f ms</td></tr>",
					x.Mode, x.Concurrency, x.PerSec, ms(x.P50), ms(x.P99), ms(x.P999))
			}
			b.WriteString("</table>")
		}
	}
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

// lineChart draws one series over the on-sale's seconds as inline SVG.
func lineChart(name, color string, samples []Sample, v func(Sample) float64) string {
	const w, h = 800.0, 160.0
	maxV := 1.0
	for _, s := range samples {
		maxV = max(maxV, v(s))
	}
	first, last := float64(samples[0].Second), float64(samples[len(samples)-1].Second)
	span := max(last-first, 1)
	var pts strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&pts, "%.1f,%.1f ", 40+(float64(s.Second)-first)/span*(w-50), 10+(h-30)*(1-v(s)/maxV))
	}
	return fmt.Sprintf(`<figure><figcaption>%s (max %.0f; seconds from opening %.0f to %.0f)</figcaption>
<svg width="%.0f" height="%.0f" style="background:#fafafa"><line x1="40" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>
<line x1="40" y1="10" x2="40" y2="%.0f" stroke="#999"/><polyline fill="none" stroke="%s" stroke-width="2" points="%s"/></svg></figure>`,
		html.EscapeString(name), maxV, first, last, w, h, h-20, w-10, h-20, h-20, color, pts.String())
}
