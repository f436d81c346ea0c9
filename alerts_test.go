package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertMetricsExist: every metric the alert rules and the dashboard
// watch is one the code exports (a renamed metric must not leave an alert
// silently blind or a panel empty).
func TestAlertMetricsExist(t *testing.T) {
	var rules []byte
	for _, f := range []string{"infra/observability/alerts.yml", "infra/observability/grafana-dashboard.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, b...)
	}
	var source strings.Builder
	for _, dir := range []string{"internal/metrics", "internal/ops"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			source.Write(b)
		}
	}
	names := regexp.MustCompile(`boxoffice_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) < 10 {
		t.Fatalf("found only %d metric names in the rules", len(names))
	}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if !strings.Contains(source.String(), `"`+base+`"`) {
			t.Errorf("the rules or the dashboard watch %s, which no collector exports", name)
		}
	}
}
