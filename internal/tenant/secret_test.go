package tenant_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/atrest"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/tenant"
)

func keyring(t *testing.T, entries ...string) *atrest.Keyring {
	t.Helper()
	keys, err := atrest.Parse(strings.Join(entries, ","))
	require.NoError(t, err)
	return keys
}

// stored is what a database reader sees of a tenant's secrets.
func stored(t *testing.T, schema *dbtest.Schema, id uuid.UUID) (string, *string) {
	t.Helper()
	var current string
	var previous *string
	require.NoError(t, schema.Pool.QueryRow(context.Background(),
		`SELECT buyer_token_secret, previous_buyer_token_secret FROM tenants WHERE id = $1`, id).Scan(&current, &previous))
	return current, previous
}

func verifies(t *testing.T, store *tenant.Store, id uuid.UUID, secret string) bool {
	t.Helper()
	tok, err := tenant.SignBuyerToken([]byte(secret), id, "ana", time.Minute)
	require.NoError(t, err)
	_, err = tenant.VerifyBuyerToken(context.Background(), store, tok)
	return err == nil
}

// A database reader cannot mint buyers: buyer-token secrets are stored
// sealed under BOXOFFICE_SECRETS_KEY, current and previous alike, and a
// sealed secret copied onto another tenant does not open there.
func TestBuyerTokenSecretsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 4)
	ctx := context.Background()
	store := tenant.NewStore(schema.Pool, keyring(t, atrest.Generate("k1")))

	created, err := store.Create(ctx, tenant.CreateParams{Slug: "sealed", Name: "Sealed"})
	require.NoError(t, err)
	current, _ := stored(t, schema, created.ID)
	require.True(t, strings.HasPrefix(current, "sealed:k1:"), current)
	require.NotContains(t, current, created.BuyerTokenSecret)
	require.True(t, verifies(t, store, created.ID, created.BuyerTokenSecret))

	rotated, _, err := store.RotateBuyerTokenSecret(ctx, created.ID, time.Hour)
	require.NoError(t, err)
	current, previous := stored(t, schema, created.ID)
	require.NotNil(t, previous)
	for _, v := range []string{current, *previous} {
		require.True(t, strings.HasPrefix(v, "sealed:k1:"), v)
		require.NotContains(t, v, created.BuyerTokenSecret)
		require.NotContains(t, v, rotated)
	}
	require.True(t, verifies(t, store, created.ID, rotated))
	require.True(t, verifies(t, store, created.ID, created.BuyerTokenSecret), "the previous secret within its overlap")

	other, err := store.Create(ctx, tenant.CreateParams{Slug: "other", Name: "Other"})
	require.NoError(t, err)
	_, err = schema.Pool.Exec(ctx, `UPDATE tenants SET buyer_token_secret = $2 WHERE id = $1`, other.ID, current)
	require.NoError(t, err)
	_, err = store.BuyerTokenSecrets(ctx, other.ID)
	require.ErrorIs(t, err, atrest.ErrOpen, "a sealed secret moved to another tenant does not open")
}

// Reseal (run by `migrate`) seals secrets left in clear by an older
// version and moves secrets to the first key of a rotated ring; once the
// old key is dropped, everything still opens. A previous secret past its
// overlap is dropped rather than resealed.
func TestResealSealsLegacySecretsAndRotatesTheKey(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 4)
	ctx := context.Background()
	k1, k2 := atrest.Generate("k1"), atrest.Generate("k2")
	old := tenant.NewStore(schema.Pool, keyring(t, k1))

	legacy, err := old.Create(ctx, tenant.CreateParams{Slug: "legacy", Name: "Legacy"})
	require.NoError(t, err)
	_, err = schema.Pool.Exec(ctx, `UPDATE tenants SET buyer_token_secret = 'in-clear-from-before' WHERE id = $1`, legacy.ID)
	require.NoError(t, err)
	rotated, err := old.Create(ctx, tenant.CreateParams{Slug: "rotated", Name: "Rotated"})
	require.NoError(t, err)
	secret, _, err := old.RotateBuyerTokenSecret(ctx, rotated.ID, time.Hour)
	require.NoError(t, err)
	expired, err := old.Create(ctx, tenant.CreateParams{Slug: "expired", Name: "Expired"})
	require.NoError(t, err)
	expiredSecret, _, err := old.RotateBuyerTokenSecret(ctx, expired.ID, 0)
	require.NoError(t, err)

	n, err := old.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the tenant in clear, and the expired previous secret dropped")
	current, _ := stored(t, schema, legacy.ID)
	require.True(t, strings.HasPrefix(current, "sealed:k1:"), current)
	require.True(t, verifies(t, old, legacy.ID, "in-clear-from-before"))

	both := tenant.NewStore(schema.Pool, keyring(t, k2, k1))
	n, err = both.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "every tenant moves to k2")
	n, err = both.Reseal(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to reseal")

	next := tenant.NewStore(schema.Pool, keyring(t, k2))
	for _, id := range []uuid.UUID{legacy.ID, rotated.ID, expired.ID} {
		current, previous := stored(t, schema, id)
		require.True(t, strings.HasPrefix(current, "sealed:k2:"), current)
		if previous != nil {
			require.True(t, strings.HasPrefix(*previous, "sealed:k2:"), *previous)
		}
	}
	require.True(t, verifies(t, next, legacy.ID, "in-clear-from-before"))
	require.True(t, verifies(t, next, rotated.ID, secret))
	require.True(t, verifies(t, next, rotated.ID, rotated.BuyerTokenSecret), "the previous secret, resealed")
	require.True(t, verifies(t, next, expired.ID, expiredSecret))
	_, previous := stored(t, schema, expired.ID)
	require.Nil(t, previous, "an expired previous secret is not kept")

	_, err = tenant.NewStore(schema.Pool, keyring(t, atrest.Generate("k3"))).Reseal(ctx)
	require.ErrorIs(t, err, atrest.ErrOpen, "a ring without the sealing key refuses rather than losing secrets")
}
