package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// owners names the one package that reads and writes each table; every
// other package goes through the owner's functions.
var owners = map[string][]string{
	"internal/tenant":      {"tenants", "api_keys"},
	"internal/product":     {"products", "events"},
	"internal/inventory":   {"inventory", "inventory_pages"},
	"internal/reservation": {"reservation_requests", "holds", "claims", "buyer_limits", "claim_queues"},
	"internal/waitlist":    {"waitlist_entries"},
	"internal/codes":       {"code_lists", "codes", "code_uses", "presale_uses"},
	"internal/outbox":      {"outbox"},
	"internal/checkout":    {"orders", "payment_attempts", "checkout_control", "webhook_events", "tickets", "refunds", "mail_sent", "ticket_transfers"},
	"internal/waitingroom": {"waiting_rooms", "queue_entries", "admission_steps", "presale_rounds"},
	"internal/login":       {"login_codes", "login_buyers", "login_clients", "login_sms_days"},
	"internal/audit":       {"audit_log"},
	"internal/session":     {"console_sessions"},
	"internal/rehearsal":   {"rehearsals"},
	"internal/webhook":     {"webhook_endpoints", "webhook_deliveries", "webhook_attempts"},
	// River's own: its client inserts and works the jobs; what else reads
	// them is in one place.
	"internal/riverjobs": {"river_job"},
}

// checkers verify outcomes in tests and benchmarks independently of the code
// under test: they may read any table and write none.
var checkers = []string{"internal/bench", "internal/fleet", "internal/testfix"}

var (
	createTable = regexp.MustCompile(`(?i)CREATE TABLE (?:IF NOT EXISTS )?(\w+)`)
	sqlRead     = regexp.MustCompile(`(?i)\b(?:from|join)\s+(?:only\s+)?(\w+)`)
	sqlWrite    = regexp.MustCompile(`(?i)\b(?:insert\s+into|update|delete\s+from|truncate|alter\s+table)\s+(?:only\s+)?(\w+)`)
)

// TestOneOwnerPerTable reads every non-test Go file's string literals for
// SQL that names a table, and pgx.Identifier literals (COPY), and fails on
// a package using a table it does not own.
func TestOneOwnerPerTable(t *testing.T) {
	tables := map[string]bool{}
	migrations, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(migrations) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	for _, m := range migrations {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, sm := range createTable.FindAllStringSubmatch(string(b), -1) {
			tables[strings.ToLower(sm[1])] = true
		}
	}
	tables["river_job"] = true // created by River's migrator, not by a file here
	owner := map[string]string{}
	for pkg, ts := range owners {
		for _, table := range ts {
			owner[table] = pkg
		}
	}
	for table := range tables {
		if owner[table] == "" {
			t.Errorf("table %s has no owner: add it to owners", table)
		}
	}

	checked := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		use := func(table string, write bool) {
			table = strings.ToLower(table)
			if !tables[table] || owner[table] == pkg {
				return
			}
			if !write && slices.Contains(checkers, pkg) {
				return
			}
			verb := "reads"
			if write {
				verb = "writes"
			}
			t.Errorf("%s %s table %s, which %s owns", path, verb, table, owner[table])
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for _, sm := range sqlRead.FindAllStringSubmatch(s, -1) {
					use(sm[1], false)
				}
				for _, sm := range sqlWrite.FindAllStringSubmatch(s, -1) {
					use(sm[1], true)
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Identifier" {
					for _, e := range n.Elts {
						if lit, ok := e.(*ast.BasicLit); ok {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								use(s, true) // COPY into a table
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}
