package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/config"
	"boxoffice/internal/proctest"
)

// A page Lighthouse judges, and the scores it must reach (0–100; a
// category left out is not judged).
type lighthousePage struct {
	name, url string
	min       map[string]float64
}

// lighthouseRuns is how many times each page is judged. Lighthouse's
// variability guide finds the median of five runs twice as stable as one
// run; on two shared cores the median of three moved by several points
// between runs of the same build (the seat map 94, 96 and 96 within an
// hour, docs/benchmark-history.md).
const lighthouseRuns = 5

// TestLighthouse judges the demo `make run` seeds with Lighthouse (npm,
// pinned in infra/dev/audit) in mobile emulation, the median of
// lighthouseRuns runs a page: the store's home, an event page with its
// image and venue map, a series' page of dates, a concert hall's seat map,
// checkout and an order (with its tickets and the way to cancel it) must
// score performance ≥ 95, accessibility 100 and best practices 100; the
// console's sign-in, sales list and live sale view and the API docs page
// accessibility 100. Lighthouse drives the same Chromium the test signed
// in with, keeping its storage, so the pages behind a sign-in and a hold
// are judged as their users see them.
//
// It runs on its own, after the other tests (`make test` sets
// BOXOFFICE_LIGHTHOUSE=1): performance is timed, and the race-enabled suite
// shares the cores.
func TestLighthouse(t *testing.T) {
	if os.Getenv("BOXOFFICE_LIGHTHOUSE") == "" {
		t.Skip("BOXOFFICE_LIGHTHOUSE=1 runs Lighthouse (make test does, after the other tests)")
	}
	tools := config.AuditTools()
	require.NotEmpty(t, tools, "BOXOFFICE_AUDIT_TOOLS names the folder infra/dev/audit.sh prints")
	cli := filepath.Join(tools, "node_modules", "lighthouse", "cli", "index.js")
	node, err := exec.LookPath("node")
	require.NoError(t, err, "Node.js (infra/dev/audit.sh installs it)")

	printed := startDemo(t)
	store, api := printed["Store"], printed["API"]
	port := proctest.FreePort(t)
	// 45 Lighthouse runs take a quarter of an hour.
	b := browsertest.BrowserFor(t, 25*time.Minute, remote.WebSocket, chromedp.Flag("remote-debugging-port", strconv.Itoa(port)))

	// The shopper signs in (the demo tenant's login hands a token over) and
	// holds two seats of the concert hall; the console is signed in with
	// the demo operator's key.
	browsertest.Do(t, b, chromedp.Navigate(store+"#/login"), chromedp.WaitVisible(chromedp.CSS(`#login-email`)),
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("bo.demo.handoff", "lh")`),
		chromedp.Navigate(store+"#/login?token="+printed["Buyer token"]+"&state=lh"),
		chromedp.WaitVisible(chromedp.CSS(`ul.cards`)))
	// The concert hall plays three evenings: its first date, and the
	// series' page of dates; two of its seats are held for checkout, two
	// more bought.
	hall, series := catalogProduct(t, api, "The Four Seasons")
	checkout, _ := holdTwo(t, api, printed["Buyer token"], hall)
	checkout = store + checkout
	order := store + paidOrder(t, api, printed["Buyer token"], hall)
	browsertest.Do(t, b, chromedp.Navigate(order), chromedp.WaitVisible(chromedp.CSS(`.order-page section.cancel`)))
	browsertest.Do(t, b, chromedp.Navigate(checkout), chromedp.WaitVisible(chromedp.CSS(`form.checkout`)))
	browsertest.Do(t, b, chromedp.Navigate(printed["Console"]+"#/signin"), chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), printed["Operator key"]), chromedp.Click(chromedp.CSS(`form.signin button`)),
		browsertest.WaitJS(`location.hash === '#/sales' && !!document.querySelector('main table')`))

	shop := map[string]float64{"performance": 95, "accessibility": 100, "best-practices": 100}
	console := map[string]float64{"accessibility": 100}
	pages := []lighthousePage{
		{"store home", store, shop},
		{"event page", store + "#/p/" + printed["Stadium"], shop},
		{"series page", store + "#/e/" + series, shop},
		{"seat map", store + "#/p/" + hall, shop},
		{"checkout", checkout, shop},
		{"order", order, shop},
		{"console sign-in", printed["Console"] + "#/signin", console},
		{"console sales", printed["Console"] + "#/sales", console},
		{"console live sale", printed["Console"] + "#/sales/" + printed["Stadium"], console},
		{"API docs", api + "/docs", console},
	}
	out := t.TempDir()
	for _, p := range pages {
		var cats []string
		for c := range p.min {
			cats = append(cats, c)
		}
		runs := map[string][]float64{}
		var last lighthouseReport
		for i := range lighthouseRuns {
			file := filepath.Join(out, fmt.Sprintf("%s-%d.json", strings.ReplaceAll(p.name, " ", "-"), i))
			cmd := exec.Command(node, cli, p.url, fmt.Sprintf("--port=%d", port), "--disable-storage-reset",
				"--output=json", "--output-path="+file, "--only-categories="+strings.Join(cats, ","), "--quiet")
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "lighthouse on %s: %s", p.name, msg)
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			last = lighthouseReport{}
			require.NoError(t, json.Unmarshal(raw, &last))
			require.Empty(t, last.RuntimeError.Code, "lighthouse on %s: %s", p.name, last.RuntimeError.Message)
			for c := range p.min {
				runs[c] = append(runs[c], last.Categories[c].Score*100)
			}
		}
		for c, want := range p.min {
			got := median(runs[c])
			t.Logf("%-18s %-15s %3.0f (runs %v)", p.name, c, got, runs[c])
			if got < want {
				t.Errorf("%s: %s %.0f, want ≥ %.0f; short of it in the last run: %s", p.name, c, got, want, last.failing(c))
			}
		}
	}
}

// lighthouseReport is the part of Lighthouse's JSON report read here.
type lighthouseReport struct {
	RuntimeError struct{ Code, Message string } `json:"runtimeError"`
	Categories   map[string]struct {
		Score float64 `json:"score"`
		Refs  []struct {
			ID     string  `json:"id"`
			Weight float64 `json:"weight"`
		} `json:"auditRefs"`
	} `json:"categories"`
	Audits map[string]struct {
		Score        *float64 `json:"score"`
		DisplayValue string   `json:"displayValue"`
		Title        string   `json:"title"`
	} `json:"audits"`
}

// failing lists a category's weighted audits that did not score full marks.
func (r lighthouseReport) failing(category string) string {
	var out []string
	for _, ref := range r.Categories[category].Refs {
		if a := r.Audits[ref.ID]; ref.Weight > 0 && a.Score != nil && *a.Score < 1 {
			out = append(out, fmt.Sprintf("%s (%.2f %s)", ref.ID, *a.Score, a.DisplayValue))
		}
	}
	return strings.Join(out, ", ")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// catalogProduct is the id of the demo store's first date with the name,
// and its event's.
func catalogProduct(t *testing.T, api, name string) (id, eventID string) {
	t.Helper()
	resp, err := http.Get(api + "/v1/stores/demo/products")
	require.NoError(t, err)
	defer resp.Body.Close()
	var catalog struct {
		Products []struct {
			ID, Name string
			Event    struct{ ID string }
		} `json:"products"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&catalog))
	for _, p := range catalog.Products {
		if p.Name == name {
			return p.ID, p.Event.ID
		}
	}
	t.Fatalf("no %q in the demo store", name)
	return "", ""
}

// buyerCall calls the demo's API as the buyer, each call under its own
// Idempotency-Key, and decodes the answer into out.
func buyerCall(t *testing.T, api, token, method, path string, body, out any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, api+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("lighthouse-%d", time.Now().UnixNano()))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "%s %s", method, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// holdTwo reserves two seats of a product for the buyer and returns the
// store's checkout address (its hash) for the hold, and the hold.
func holdTwo(t *testing.T, api, token, productID string) (checkout, holdID string) {
	t.Helper()
	var accepted struct {
		ID string `json:"id"`
	}
	buyerCall(t, api, token, http.MethodPost, "/v1/products/"+productID+"/reservations", map[string]int{"quantity": 2}, &accepted)
	var r struct {
		Status string `json:"status"`
		HoldID string `json:"holdId"`
	}
	require.Eventually(t, func() bool {
		buyerCall(t, api, token, http.MethodGet, "/v1/reservations/"+accepted.ID, nil, &r)
		return r.Status == "HELD"
	}, 30*time.Second, 100*time.Millisecond, "the two seats are held")
	return fmt.Sprintf("#/checkout/%s?p=%s&r=%s", r.HoldID, productID, accepted.ID), r.HoldID
}

// paidOrder holds two seats of a product for the buyer, pays for them with
// the simulator's approving card and returns the store's address (its
// hash) of the order, as its e-mails link to it.
func paidOrder(t *testing.T, api, token, productID string) string {
	t.Helper()
	_, hold := holdTwo(t, api, token, productID)
	var o struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	buyerCall(t, api, token, http.MethodPost, "/v1/orders",
		map[string]string{"holdId": hold, "paymentMethod": "sim_ok", "email": "alice@example.com"}, &o)
	require.Eventually(t, func() bool {
		buyerCall(t, api, token, http.MethodGet, "/v1/orders/"+o.ID, nil, &o)
		return o.Status == "CONFIRMED"
	}, 30*time.Second, 100*time.Millisecond, "the order is paid")
	return "#/o/" + o.ID
}
