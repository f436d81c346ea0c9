package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/tenant"
)

// TestDocsScreenshots takes the docs' pictures of the demo as `make run`
// seeds it — the store's home, a series' dates, an event page, the venue
// map, a section, checkout, the order with its tickets, a sold-out
// night's waiting list, the raffle's numbers, the ticket mail and a PDF ticket (rendered with
// poppler's pdftoppm where installed), and the console's pages in the operations guide — into the folder
// BOXOFFICE_DOCS_SHOTS names (`make screenshots` names docs/). Skipped
// otherwise: pictures are committed on purpose, not by every test run.
func TestDocsScreenshots(t *testing.T) {
	dir := os.Getenv("BOXOFFICE_DOCS_SHOTS")
	if dir == "" {
		t.Skip("BOXOFFICE_DOCS_SHOTS names the folder for the pictures (make screenshots)")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755)) //nolint:gosec // G301: a folder of pictures
	printed := startDemo(t)
	store, inbox, api, token := printed["Store"], printed["Dev inbox"], printed["API"], printed["Buyer token"]

	b := browsertest.Browser(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
	seatMapReady := browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`)
	browsertest.Do(t, b, chromedp.EmulateViewport(1280, 860),
		chromedp.Navigate(store+"#/login"), chromedp.WaitVisible(chromedp.CSS(`#login-email`)),
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("bo.demo.handoff", "docs")`),
		chromedp.Navigate(store+"#/login?token="+token+"&state=docs"),
		chromedp.WaitVisible(chromedp.CSS(`ul.cards`)),
		browsertest.WaitJS(`[...document.querySelectorAll('.card img')].every((i) => i.complete && i.naturalWidth > 0)`))
	shot("store-home")

	// The concert hall's three evenings: the series' page of dates.
	browsertest.Do(t, b, chromedp.Click(chromedp.CSS(`li.card[data-event] h2 a`)), chromedp.WaitVisible(chromedp.CSS(`ul.dates`)),
		browsertest.WaitJS(`[...document.querySelectorAll('main img')].every((i) => i.complete && i.naturalWidth > 0)`))
	shot("store-series")

	// The stadium: its page, the whole venue, then a section.
	stadium := printed["Stadium"]
	browsertest.Do(t, b, chromedp.Navigate(store+"#/p/"+stadium), seatMapReady)
	shot("store-event")
	browsertest.Do(t, b, chromedp.Evaluate[chromedp.Void](`document.querySelector('canvas.map').scrollIntoView({block: 'end'})`))
	shot("store-venue-map")
	// A seat of the first row of the Lower tier's middle section, by its
	// place in the row.
	pos := func(k string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			p, err := chromedp.Evaluate[struct{ X, Y float64 }](`window.__seatMap.pos(window.__seatMap.seats.findIndex((s) => s.full.startsWith('Lower 103 · Row 1 ·')) + `+k+`)`)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.MouseClickXY(p.X, p.Y)(ctx, tg)
		}
	}
	browsertest.Do(t, b, chromedp.Click(chromedp.CSS(`nav.sections button:nth-child(5)`)), // Lower 103
		chromedp.Evaluate[chromedp.Void](`document.querySelector('canvas.map').scrollIntoView({block: 'end'})`),
		pos("8"), pos("9"), browsertest.WaitJS(`window.__seatMap.picked.size === 2`))
	shot("store-section")

	// Hold them and go to checkout.
	browsertest.Do(t, b,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.summary`)),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`form.checkout`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), "alice@example.com"))
	shot("store-checkout")
	browsertest.Do(t, b, chromedp.Click(chromedp.CSS(`form.checkout button.primary`)),
		browsertest.WaitJS(`document.querySelectorAll('.tickets img.qr').length === 2 && [...document.querySelectorAll('.tickets img.qr')].every((i) => i.complete)`))
	shot("store-tickets")

	// The sold-out night: its page is the waiting list.
	browsertest.Do(t, b, chromedp.Navigate(store+"#/p/"+printed["Sold out"]), chromedp.WaitVisible(chromedp.CSS(`#waitlist-join`)))
	shot("store-waitlist")

	// The raffle: browsed down to a hundred numbers, two of them picked.
	pick := func(n string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('ul.numbers button')].find((b) => b.textContent === '` + n + `').click()`)
	}
	browsertest.Do(t, b, chromedp.Navigate(store+"#/p/"+printed["Raffle"]), chromedp.WaitVisible(chromedp.CSS(`ul.ranges`)),
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('ul.ranges button')].find((b) => b.textContent.startsWith('701–800')).click()`),
		browsertest.WaitJS(`document.querySelectorAll('ul.numbers button').length === 100`),
		pick("707"), pick("777"), browsertest.WaitJS(`document.querySelectorAll('ul.numbers button[aria-pressed="true"]').length === 2`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('nav.crumbs').previousElementSibling.scrollIntoView({block: 'start'})`))
	shot("store-raffle")

	// The mail as a mail client shows it, and the PDF ticket.
	var pdf []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get(inbox + "/messages/0/attachments/0")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		pdf, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/pdf"
	}, 30*time.Second, 200*time.Millisecond, "the ticket mail arrives")
	browsertest.Do(t, b, chromedp.EmulateViewport(760, 1100), chromedp.Navigate(inbox+"/messages/0/html"),
		chromedp.WaitVisible(chromedp.CSS(`h1`)))
	shot("ticket-mail")
	if pdftoppm, err := exec.LookPath("pdftoppm"); err == nil {
		src := filepath.Join(t.TempDir(), "tickets.pdf")
		require.NoError(t, os.WriteFile(src, pdf, 0o644))
		page := filepath.Join(dir, "ticket-pdf")
		out, err := exec.Command(pdftoppm, "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", src, page).CombinedOutput()
		require.NoError(t, err, "%s", out)
	} else {
		t.Log("no pdftoppm (Debian's poppler-utils): the PDF ticket's picture is left as it was")
	}

	consolePictures(t, b, shot, printed)
	t.Logf("pictures in %s (API %s)", dir, api)
}

// consolePictures takes the console's pictures in docs/operations.md on the
// same demo: the stadium's live view while fans reserve, a rehearsal of
// the sold-out night, and the platform admin's Operations page with
// checkout paused.
func consolePictures(t *testing.T, b context.Context, shot func(string), printed map[string]string) {
	t.Helper()
	api, stadium := printed["API"], printed["Stadium"]
	browsertest.Do(t, b, chromedp.EmulateViewport(1280, 1120), browsertest.ConsoleSignIn(api, printed["Tenant API key"]),
		chromedp.Navigate(api+"/console/#/sales/"+stadium), chromedp.WaitVisible(chromedp.CSS(`#tiles`)))

	// 400 fans ask for two seats each over four seconds (the API's limit
	// per address is 200 a second), as a small opening would.
	tenantID, err := uuid.Parse(printed["Demo tenant"])
	require.NoError(t, err)
	var fans sync.WaitGroup
	for i := range 400 {
		token, err := tenant.SignBuyerToken([]byte(printed["Buyer secret"]), tenantID, fmt.Sprintf("fan-%d", i), time.Hour)
		require.NoError(t, err)
		fans.Go(func() {
			req, err := http.NewRequest(http.MethodPost, api+"/v1/products/"+stadium+"/reservations", strings.NewReader(`{"quantity":2}`))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("docs-%d", i))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		})
		time.Sleep(10 * time.Millisecond)
	}
	fans.Wait()
	browsertest.Do(t, b, browsertest.WaitJS(`Number(document.querySelector('[data-chart~="accepted"]')?.dataset.peak) >= 100`))
	shot("console-live")

	// A rehearsal of the 24-seat night: 60 synthetic buyers, L = 30, W = 2 s,
	// every holder paying (the night's holds last 15 minutes: a holder who
	// does not pay keeps the seats that long).
	browsertest.Do(t, b, chromedp.EmulateViewport(1200, 757), chromedp.Navigate(api+"/console/#/rehearse/"+printed["Sold out"]),
		chromedp.WaitVisible(chromedp.CSS(`#h-buyers`)),
		chromedp.SetValue(chromedp.CSS(`#h-buyers`), "60"), chromedp.SetValue(chromedp.CSS(`#h-l`), "30"),
		chromedp.SetValue(chromedp.CSS(`#h-w`), "2"), chromedp.SetValue(chromedp.CSS(`#h-arrival`), "3"),
		chromedp.SetValue(chromedp.CSS(`#h-pay`), "100"),
		chromedp.Click(chromedp.CSS(`#start-rehearsal`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.rehearsal[data-status="DONE"]`)))
	require.NotEqual(t, "not sold out", browsertest.Text(t, b, `tr.rehearsal td.sellout`))
	shot("console-rehearsal")

	// The platform admin pauses checkout for a provider incident.
	browsertest.Do(t, b, browsertest.ConsoleSignIn(api, printed["Admin key"]), chromedp.Navigate(api+"/console/#/ops"),
		chromedp.WaitVisible(chromedp.CSS(`#pause-reason`)),
		chromedp.SendKeys(chromedp.CSS(`#pause-reason`), "provider incident"),
		chromedp.Click(chromedp.CSS(`#pause`)), chromedp.WaitVisible(chromedp.CSS(`#pause-confirm`)),
		chromedp.Click(chromedp.CSS(`#pause`)), browsertest.WaitText(`#checkout-state`, "paused: provider incident"))
	shot("console-operations")
}
