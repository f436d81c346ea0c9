package atrest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/atrest"
)

func ring(t *testing.T, s string) *atrest.Keyring {
	t.Helper()
	r, err := atrest.Parse(s)
	require.NoError(t, err)
	return r
}

func TestSealOpensOnlyInItsContextAndUnderItsKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := atrest.Generate("k1"), atrest.Generate("k2")
	old, both, next := ring(t, k1), ring(t, k2+","+k1), ring(t, k2)

	sealed := old.Seal("the secret", "tenant:a")
	require.True(t, strings.HasPrefix(sealed, "sealed:k1:"))
	require.NotContains(t, sealed, "the secret")
	require.NotEqual(t, sealed, old.Seal("the secret", "tenant:a"), "a fresh nonce each time")

	plain, err := old.Open(sealed, "tenant:a")
	require.NoError(t, err)
	require.Equal(t, "the secret", plain)

	_, err = old.Open(sealed, "tenant:b")
	require.ErrorIs(t, err, atrest.ErrOpen, "copied to another row, it does not open")
	// One character changed for certain ("AA" in place of the last two
	// was no change at all once in a few thousand values).
	tampered := []byte(sealed)
	if i := len(tampered) - 5; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	_, err = old.Open(string(tampered), "tenant:a")
	require.ErrorIs(t, err, atrest.ErrOpen)
	// Nor another spelling of the same bytes (base64's unused bits).
	_, err = old.Open(sealed[:len(sealed)-1]+string(sealed[len(sealed)-1]+1), "tenant:a")
	require.ErrorIs(t, err, atrest.ErrOpen)

	// Rotation: the new ring opens the old value and seals under k2; once
	// k1 is dropped, only what was resealed opens.
	plain, err = both.Open(sealed, "tenant:a")
	require.NoError(t, err)
	require.Equal(t, "the secret", plain)
	require.False(t, strings.HasPrefix(sealed, both.CurrentPrefix()))
	resealed := both.Seal(plain, "tenant:a")
	require.True(t, strings.HasPrefix(resealed, both.CurrentPrefix()))
	_, err = next.Open(sealed, "tenant:a")
	require.ErrorIs(t, err, atrest.ErrOpen)
	plain, err = next.Open(resealed, "tenant:a")
	require.NoError(t, err)
	require.Equal(t, "the secret", plain)

	// A value from before sealing reads as it is, until migrate seals it.
	plain, err = next.Open("left-in-clear", "tenant:a")
	require.NoError(t, err)
	require.Equal(t, "left-in-clear", plain)
	require.False(t, atrest.IsSealed("left-in-clear"))
}

func TestMACVerifiesUnderEveryKeyOfTheRing(t *testing.T) {
	t.Parallel()
	k1, k2 := atrest.Generate("k1"), atrest.Generate("k2")
	old, both := ring(t, k1), ring(t, k2+","+k1)
	mac := old.MAC("login", []byte("salt"), []byte("123456"))
	require.True(t, both.Verify(mac, "login", []byte("salt"), []byte("123456")))
	require.False(t, both.Verify(mac, "login", []byte("salt"), []byte("123457")))
	require.False(t, both.Verify(mac, "other", []byte("salt"), []byte("123456")), "a purpose's MAC is not another's")
	require.False(t, ring(t, k2).Verify(mac, "login", []byte("salt"), []byte("123456")))
}

func TestParseRefusesBadKeysWithoutEchoingThem(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"", "nokey", "k1:", "k1:c2hvcnQ=", "bad id:" + strings.Repeat("A", 44),
		atrest.Generate("k1") + "," + atrest.Generate("k1"), "k1:!!!notbase64!!!",
	} {
		_, err := atrest.Parse(bad)
		require.Error(t, err, bad)
		if _, key, ok := strings.Cut(bad, ":"); ok && len(key) > 8 {
			require.NotContains(t, err.Error(), key, "the error does not show the key")
		}
	}
	r := ring(t, " k1:"+strings.Repeat("A", 43)+"= , k0:"+strings.Repeat("_", 42)+"w")
	require.Equal(t, "sealed:k1:", r.CurrentPrefix())
}
