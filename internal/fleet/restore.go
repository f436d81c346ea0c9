package fleet

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/mail"
	"boxoffice/internal/proctest"
	"boxoffice/internal/reservation"
)

// Restore is what RestoreDrill measured.
type Restore struct {
	// ConfirmedInBackup: orders CONFIRMED in the restored database.
	ConfirmedInBackup int `json:"confirmedInBackup"`
	// LostSinceBackup: orders shoppers saw confirmed after the backup was
	// taken, which a restore of that backup cannot have (its recovery
	// point).
	LostSinceBackup int `json:"lostSinceBackup"`
	// Replayed: outbox events the backup held as unpublished, published
	// again from the restored database.
	Replayed int `json:"replayed"`
	// Mailed: ticket messages (distinct Message-IDs) caught.
	Mailed int `json:"mailed"`
	// SentTwice: of those, sent before the restore and again after it.
	SentTwice int `json:"sentTwice"`
	// MaxCopies: the most copies of one message (at most 2).
	MaxCopies int `json:"maxCopies"`
}

// RestoreDrill backs up the database during a sale with checkout and
// ticket mail (pg_dump, a consistent snapshot), lets the sale go on, then
// stops everything and restores the backup into a new database: the
// invariant audit passes there, every order confirmed before the backup is
// there, and a work process on it replays the outbox from the restore
// point. Consumers are idempotent: a ticket mail already sent is sent at
// most once more, with the same Message-ID, and no ticket is issued twice.
func RestoreDrill(t T) Restore {
	t.Helper()
	var out Restore
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	pspPort := proctest.FreePort(t)
	env := checkoutEnv(pspPort, "whsec_restore")
	env["BOXOFFICE_SMTP_ADDR"] = sink.Addr()
	f := New(t, env)
	f.startPSP(pspPort, "whsec_restore")
	serve := f.Serve("serve")
	work := f.Work("work", nil)
	f.Tenant()
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "restore", "name": "Restore Night", "kind": "numbered", "capacity": 2000, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 600})
	shoppers := f.Shop(created["id"].(string), 4, true, nil)
	require.Eventually(t, func() bool { return shoppers.ConfirmedAfter(time.Time{}) >= 8 && len(sink.Messages()) >= 4 },
		2*time.Minute, 50*time.Millisecond, "orders confirmed and tickets mailed before the backup")

	backupAt := time.Now()
	file := filepath.Join(f.Cluster.Dir(), "backup.dump")
	f.Cluster.Dump("boxoffice", file)
	require.Eventually(t, func() bool { return shoppers.ConfirmedAfter(backupAt) >= 6 }, 2*time.Minute,
		50*time.Millisecond, "orders confirmed after the backup")
	shoppers.Stop()
	f.WaitDecided(60 * time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, f.Count(`SELECT count(*) FROM orders WHERE status = 'CONFIRMED' AND tickets_sent_at IS NULL`))
	}, time.Minute, 100*time.Millisecond, "every confirmed order's tickets mailed")

	// The disaster: the deployment stops and the backup is restored into a
	// new database.
	require.NoError(t, work.Stop(40*time.Second))
	require.NoError(t, serve.Stop(20*time.Second))
	f.Cluster.Restore(file, "restored")
	url := f.Cluster.URL("restored")
	ctx := context.Background()
	restored, err := db.Open(ctx, url, db.PoolOptions{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(restored.Close)
	count := func(p *pgxpool.Pool, sql string, args ...any) int {
		var n int
		require.NoError(t, p.QueryRow(ctx, sql, args...).Scan(&n))
		return n
	}

	v, _, err := reservation.AuditAll(ctx, restored, checkout.AuditSales)
	require.NoError(t, err)
	require.Empty(t, v, "invariant violations in the restored database")
	out.ConfirmedInBackup = count(restored, `SELECT count(*) FROM orders WHERE status = 'CONFIRMED'`)
	for _, c := range shoppers.Confirmations() {
		in := count(restored, `SELECT count(*) FROM orders WHERE id = $1 AND status = 'CONFIRMED'`, c.Order) == 1
		switch {
		case !in && c.At.After(backupAt):
			out.LostSinceBackup++
		case !in:
			t.Errorf("order %s, confirmed before the backup, is not confirmed in it", c.Order)
		}
	}
	out.Replayed = count(restored, `SELECT count(*) FROM outbox WHERE published_at IS NULL`)

	// A work process on the restored database replays the outbox.
	f.Work("work-restored", proctest.Env{"DATABASE_URL": url})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var unpublished, unsent int
		assert.NoError(c, restored.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
		assert.NoError(c, restored.QueryRow(ctx,
			`SELECT count(*) FROM orders WHERE status = 'CONFIRMED' AND tickets_sent_at IS NULL`).Scan(&unsent))
		assert.Zero(c, unpublished, "outbox events not yet published")
		assert.Zero(c, unsent, "confirmed orders without their tickets")
	}, 90*time.Second, 200*time.Millisecond, "the outbox replayed from the restore point")

	copies := map[string]int{}
	for _, m := range sink.Messages() {
		if id := m.Header("Message-ID"); strings.HasPrefix(id, "<tickets-") {
			copies[id]++
		}
	}
	out.Mailed = len(copies)
	for _, n := range copies {
		out.MaxCopies = max(out.MaxCopies, n)
		if n == 2 {
			out.SentTwice++
		}
	}
	require.LessOrEqual(t, out.MaxCopies, 2, "a ticket mail sent more than once more")
	rows, err := restored.Query(ctx, `SELECT id FROM orders WHERE status = 'CONFIRMED'`)
	require.NoError(t, err)
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	for _, id := range ids {
		assert.Contains(t, copies, "<tickets-"+id+"@boxoffice.local>", "order %s's tickets mailed", id)
	}
	require.Zero(t, count(restored, `SELECT count(*) FROM (SELECT order_id, number FROM tickets GROUP BY 1, 2 HAVING count(*) > 1) d`),
		"a ticket issued twice")
	return out
}
