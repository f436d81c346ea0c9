package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// HTMLReport renders a run's figures as one self-contained HTML page (inline
// SVG, no scripts, no external assets): the printed summary; each figure
// beside its same-run baseline; latency percentiles by concurrency; the
// on-sale's and the burst's timelines; and the trend of the key figures over
// the runs kept in bench/out (history, oldest first, this run last).
func HTMLReport(title, summary string, figures map[string]any, history []Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><meta charset="utf-8"><title>%s</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}pre{background:#f4f4f4;padding:1em;overflow:auto}
td,th{padding:2px 8px;font-variant-numeric:tabular-nums;text-align:left}td.n{text-align:right}h2{margin-top:2em}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:4px}.legend span{margin-right:1em}</style><h1>%s</h1>`,
		html.EscapeString(title), html.EscapeString(title))
	fmt.Fprintf(&b, "<h2>Summary</h2><pre>%s</pre>", html.EscapeString(summary))

	if cs := comparisons(generic(figures)); len(cs) > 0 {
		b.WriteString("<h2>Each figure beside its baseline (same run)</h2>")
		for _, c := range cs {
			b.WriteString(comparisonBars(c))
		}
	}
	if steps, ok := figures["accept"].(map[string]any); ok {
		if st, ok := steps["result"].([]HTTPAcceptStep); ok && len(st) > 0 {
			b.WriteString("<h2>Accept latency by concurrency</h2>")
			b.WriteString(acceptLatencyChart(st))
		}
	}
	if on, ok := figures["onsale"].(map[string]any); ok {
		if r, ok := on["result"].(*OnsaleResult); ok && len(r.Timeline) > 1 {
			b.WriteString("<h2>On-sale timeline</h2>")
			xs := make([]float64, len(r.Timeline))
			avail, queued, admitted := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
			for i, s := range r.Timeline {
				xs[i], avail[i], queued[i], admitted[i] = float64(s.Second), float64(s.Available), float64(s.Queued), float64(s.Admitted)
			}
			b.WriteString(lineChart("Seats available", "seconds from opening", "seats", xs, []series{{"available", "#3b6ea8", avail}}))
			b.WriteString(lineChart("Claim backlog", "seconds from opening", "requests", xs, []series{{"queued", "#c0392b", queued}}))
			b.WriteString(lineChart("Waiting room: admitted through", "seconds from opening", "positions", xs, []series{{"admitted", "#27ae60", admitted}}))
		}
	}
	if bu, ok := figures["burst"].(map[string]any); ok {
		if r, ok := bu["result"].(*BurstResult); ok {
			b.WriteString("<h2>The burst over time</h2>")
			for _, run := range r.Runs {
				if run.Mode != "pipeline" || len(run.Timeline) < 2 {
					continue
				}
				xs := make([]float64, len(run.Timeline))
				rec, dec, left, wait := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
				for i, s := range run.Timeline {
					xs[i], rec[i], dec[i], left[i] = s.At, float64(s.Recorded), float64(s.Decided), float64(s.QueuedLeft)
					wait[i] = float64(s.WaitP50) / float64(time.Millisecond)
				}
				b.WriteString(lineChart(fmt.Sprintf("Pipeline, %s: requests per 250 ms", run.Ask), "seconds from the first send", "requests",
					xs, []series{{"recorded", "#3b6ea8", rec}, {"decided", "#27ae60", dec}, {"still queued", "#c0392b", left}}))
				b.WriteString(lineChart(fmt.Sprintf("Pipeline, %s: request → decision, p50 of the requests recorded in each step", run.Ask),
					"seconds from the first send", "ms", xs, []series{{"wait p50", "#8e44ad", wait}}))
			}
		}
	}
	if len(history) > 1 {
		b.WriteString("<h2>Trend over the last runs (bench/out)</h2>")
		b.WriteString(trend(history))
	}
	return b.String()
}

// generic is figures as JSON would give them back (numbers as float64).
func generic(figures map[string]any) map[string]any {
	raw, _ := json.Marshal(figures)
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	return v
}

// at reads a number at a dotted path of a generic value (runs[0] indexes).
func at(v any, path string) (float64, bool) {
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			_, _ = fmt.Sscanf(part[i:], "[%d]", &idx)
			part = part[:i]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		if v, ok = m[part]; !ok {
			return 0, false
		}
		if idx >= 0 {
			l, ok := v.([]any)
			if !ok || idx >= len(l) {
				return 0, false
			}
			v = l[idx]
		}
	}
	f, ok := v.(float64)
	return f, ok
}

// comparison is a figure beside its baseline.
type comparison struct {
	Title, Unit, Name, Base string
	Value, BaseValue        float64
	LowerIsBetter           bool
}

// comparisons picks each scenario's figure and baseline from a run.
func comparisons(f map[string]any) []comparison {
	var out []comparison
	add := func(title, unit, name, path, base, basePath string, lower bool, scale float64) {
		v, ok1 := at(f, path)
		bv, ok2 := at(f, basePath)
		if ok1 && ok2 && (v != 0 || bv != 0) {
			out = append(out, comparison{Title: title, Unit: unit, Name: name, Base: base, Value: v * scale, BaseValue: bv * scale, LowerIsBetter: lower})
		}
	}
	const ns2ms = 1e-6
	add("Claims: batched against one request per transaction", "numbers/s", "batched", "claim.result.batched.numbersPerSec",
		"batch size 1", "claim.result.unbatched.numbersPerSec", false, 1)
	add("Claims: SQS against River", "numbers/s", "SQS", "claim.result.sqs.numbersPerSec", "River", "claim.result.batched.numbersPerSec", false, 1)
	add("Accepts with SQS: SendMessageBatch against one SendMessage each", "accepts/s", "batched", "sqsAccept.result.batched.perSec",
		"one each", "sqsAccept.result.single.perSec", false, 1)
	add("Waiting-room polls: from memory against the database", "polls/s", "memory", "room.result.pollsPerSec",
		"database", "room.result.dbPollsPerSec", false, 1)
	add("Availability reads: cached against the database", "reads/s", "cached", "million.result.cachedPerSec",
		"uncached", "million.result.uncachedPerSec", false, 1)
	add("Burst (random numbers): the pipeline against claims in the request", "decided/s", "pipeline", "burst.result.runs[0].decidedPerSec",
		"synchronous", "burst.result.runs[2].decidedPerSec", false, 1)
	add("Burst (random numbers): answer p99", "ms", "pipeline", "burst.result.runs[0].answerP99",
		"synchronous", "burst.result.runs[2].answerP99", true, ns2ms)
	for _, c := range []struct{ key, label string }{
		{"fairness2", "2 claim workers"}, {"fairness8", "8 claim workers"}, {"fairness8Capped", "8 claim workers, a tenant's claims capped at 2"}} {
		add("A small sale's request → decision p99 beside another tenant's big sale ("+c.label+"; target: at most 2× worse)", "ms", "beside",
			"faults.result."+c.key+".besideP99Ns", "alone", "faults.result."+c.key+".aloneP99Ns", true, ns2ms)
	}
	accept, _ := f["accept"].(map[string]any)
	if steps, ok := accept["result"].([]any); ok {
		best := map[string]float64{}
		for _, s := range steps {
			m, _ := s.(map[string]any)
			mode, _ := m["mode"].(string)
			v, _ := m["perSec"].(float64)
			best[mode] = max(best[mode], v)
		}
		if best["batched"] > 0 && best["one-tx"] > 0 {
			out = append(out, comparison{Title: "Accepts over HTTP: micro-batched against one transaction each (best of each)",
				Unit: "accepted/s", Name: "batched", Base: "one transaction", Value: best["batched"], BaseValue: best["one-tx"]})
		}
	}
	return out
}

// comparisonBars draws a figure and its baseline as two bars with the ratio.
func comparisonBars(c comparison) string {
	top := max(c.Value, c.BaseValue, 1e-9)
	// The ratio says how many times better the figure is than its baseline.
	ratio := 0.0
	switch {
	case c.LowerIsBetter && c.Value > 0:
		ratio = c.BaseValue / c.Value
	case !c.LowerIsBetter && c.BaseValue > 0:
		ratio = c.Value / c.BaseValue
	}
	bar := func(name string, v float64, color string) string {
		return fmt.Sprintf(`<tr><td>%s</td><td class=n>%s %s</td><td><svg width="520" height="16"><rect width="%.1f" height="14" fill="%s"/></svg></td></tr>`,
			html.EscapeString(name), readable(v), html.EscapeString(c.Unit), 500*v/top, color)
	}
	better := "higher"
	if c.LowerIsBetter {
		better = "lower"
	}
	verdict := fmt.Sprintf("%.2f× better", ratio)
	if ratio > 0 && ratio < 1 {
		verdict = fmt.Sprintf("%.2f× worse", 1/ratio)
	}
	return fmt.Sprintf(`<figure><figcaption>%s — %s (%s is better)</figcaption><table>%s%s</table></figure>`,
		html.EscapeString(c.Title), verdict, better, bar(c.Name, c.Value, "#3b6ea8"), bar(c.Base, c.BaseValue, "#999"))
}

// readable prints a figure with thousands separators, or with two decimals
// unless it is whole (a run's index, a zero).
func readable(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		s := fmt.Sprintf("%.0f", v)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	return fmt.Sprintf("%.2f", v)
}

type series struct {
	name, color string
	ys          []float64
}

// lineChart draws series over xs as inline SVG with labelled axes.
func lineChart(title, xLabel, yUnit string, xs []float64, ss []series) string {
	// The unit is written above the y axis, in the top margin.
	const w, h, left, bottom, topMargin = 820.0, 210.0, 60.0, 30.0, 22.0
	top := 1.0
	for _, s := range ss {
		for _, y := range s.ys {
			top = max(top, y)
		}
	}
	x0, x1 := xs[0], xs[len(xs)-1]
	span := max(x1-x0, 1e-9)
	px := func(x float64) float64 { return left + (x-x0)/span*(w-left-10) }
	py := func(y float64) float64 { return topMargin + (h-bottom-topMargin)*(1-y/top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><figcaption>%s</figcaption><div class=legend>`, html.EscapeString(title))
	for _, s := range ss {
		fmt.Fprintf(&b, `<span style="color:%s">■ %s</span>`, s.color, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, `</div><svg width="%.0f" height="%.0f" style="background:#fafafa" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`,
		left, h-bottom, w-10, h-bottom, left, topMargin, left, h-bottom)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`, left-4, py(top*f)+4, readable(top*f))
	}
	fmt.Fprintf(&b, `<text x="4" y="12">%s</text>`, html.EscapeString(yUnit))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text><text x="%.0f" y="%.0f" text-anchor="end">%s</text>`,
		left, h-bottom+14, readable(x0), w-10, h-bottom+14, readable(x1))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (w+left)/2, h-4, html.EscapeString(xLabel))
	for _, s := range ss {
		var pts strings.Builder
		for i, y := range s.ys {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(xs[i]), py(y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.color, pts.String())
	}
	b.WriteString("</svg></figure>")
	return b.String()
}

// acceptLatencyChart draws p50 and p99 by connection count for each mode.
func acceptLatencyChart(steps []HTTPAcceptStep) string {
	byMode := map[string][]HTTPAcceptStep{}
	var modes []string
	for _, s := range steps {
		if _, ok := byMode[s.Mode]; !ok {
			modes = append(modes, s.Mode)
		}
		byMode[s.Mode] = append(byMode[s.Mode], s)
	}
	colors := []string{"#3b6ea8", "#c0392b", "#27ae60", "#8e44ad"}
	var ss []series
	var xs []float64
	for i, m := range modes {
		var p50, p99 []float64
		xs = xs[:0]
		for j, s := range byMode[m] {
			xs = append(xs, float64(j))
			p50 = append(p50, ms(s.P50))
			p99 = append(p99, ms(s.P99))
		}
		ss = append(ss, series{m + " p50", colors[(2*i)%len(colors)], p50}, series{m + " p99", colors[(2*i+1)%len(colors)], p99})
	}
	var labels []string
	for _, s := range byMode[modes[0]] {
		labels = append(labels, fmt.Sprint(s.Concurrency))
	}
	return lineChart("Answer latency (p50, p99) at "+strings.Join(labels, ", ")+" connections", "connections (each step to the right)", "ms", xs, ss)
}

// Run is one earlier run's figures, read back from bench/out.
type Run struct {
	At      time.Time
	Figures map[string]any
}

// History reads the runs written to dir (the newest limit), oldest first.
func History(dir string, limit int) []Run {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var runs []Run
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var v map[string]any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		info, err := os.Stat(f)
		if err != nil {
			continue
		}
		runs = append(runs, Run{At: info.ModTime(), Figures: v})
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].At.Before(runs[j].At) })
	if len(runs) > limit {
		runs = runs[len(runs)-limit:]
	}
	return runs
}

// trendFigures are the figures whose history is drawn.
var trendFigures = []struct{ title, unit, path string }{
	{"Claims, River batched", "numbers/s", "claim.result.batched.numbersPerSec"},
	{"Burst, pipeline decided (random numbers)", "decided/s", "burst.result.runs[0].decidedPerSec"},
	{"Burst, request → decision p99 (random numbers)", "ns", "burst.result.runs[0].decisionP99"},
	{"Waiting-room polls from memory", "polls/s", "room.result.pollsPerSec"},
	{"Checkout", "orders/s", "checkout.result.confirmedPerSec"},
}

// trend draws each figure over the runs that have it, so a regression shows.
func trend(runs []Run) string {
	var b strings.Builder
	for _, tf := range trendFigures {
		var xs, ys []float64
		for i, r := range runs {
			if v, ok := at(r.Figures, tf.path); ok {
				xs, ys = append(xs, float64(i+1)), append(ys, v)
			}
		}
		if len(xs) < 2 {
			continue
		}
		unit := tf.unit
		if unit == "ns" {
			for i := range ys {
				ys[i] /= 1e6
			}
			unit = "ms"
		}
		b.WriteString(lineChart(fmt.Sprintf("%s over the last %d runs that measured it", tf.title, len(xs)),
			"run (oldest left, this one right)", unit, xs, []series{{tf.title, "#3b6ea8", ys}}))
	}
	return b.String()
}
