package login_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/atrest"
	"boxoffice/internal/login"
	"boxoffice/internal/testfix"
)

// A database reader cannot recover a login code by trying the million of
// them: the stored value is an HMAC under BOXOFFICE_SECRETS_KEY, not a
// salted hash anyone can recompute, and a store without the key cannot
// check a code. After a key rotation, codes issued under the old key
// still verify while the old key stays in the ring.
func TestLoginCodesAreMACedWithTheSecretsKey(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	ctx := context.Background()
	k1 := atrest.Generate("k1")
	ring := func(entries string) *login.Store {
		keys, err := atrest.Parse(entries)
		require.NoError(t, err)
		return login.NewStore(env.Schema.Pool, keys)
	}
	store := ring(k1)
	const who, client = "email:ana@example.com", "192.0.2.1"

	code, err := store.Issue(ctx, env.Tenant.ID, who, client)
	require.NoError(t, err)
	var salt, stored []byte
	require.NoError(t, env.Schema.Pool.QueryRow(ctx,
		`SELECT salt, code_hash FROM login_codes WHERE tenant_id = $1 AND identifier = $2`, env.Tenant.ID, who).
		Scan(&salt, &stored))
	plain := sha256.Sum256(append(append([]byte{}, salt...), code...))
	require.NotEqual(t, plain[:], stored, "not a hash a reader can recompute")
	found := ""
	for n := range 1_000_000 {
		guess := fmt.Sprintf("%06d", n)
		if h := sha256.Sum256(append(append([]byte{}, salt...), guess...)); string(h[:]) == string(stored) {
			found = guess
			break
		}
	}
	require.Empty(t, found, "an offline search of every code finds nothing")

	_, err = ring(atrest.Generate("other")).Verify(ctx, env.Tenant.ID, who, client, code)
	require.ErrorIs(t, err, login.ErrInvalidCode, "without the key the code does not check")
	buyer, err := ring(atrest.Generate("k2")+","+k1).Verify(ctx, env.Tenant.ID, who, client, code)
	require.NoError(t, err, "a code issued before a rotation checks while the old key is in the ring")
	require.NotEmpty(t, buyer)
}
