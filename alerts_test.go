package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertMetricsExist: every metric the alert rules watch is one the code
// exports (a renamed metric must not leave an alert silently blind).
func TestAlertMetricsExist(t *testing.T) {
	rules, err := os.ReadFile("infra/observability/alerts.yml")
	if err != nil {
		t.Fatal(err)
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
		if !strings.Contains(source.String(), `"`+name+`"`) {
			t.Errorf("alerts.yml watches %s, which no collector exports", name)
		}
	}
}
