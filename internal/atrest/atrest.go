// Package atrest keeps the secrets BoxOffice must store in PostgreSQL
// useless to whoever reads the database or a backup of it: tenant secrets
// are sealed (AES-256-GCM) and short codes are MACed, both with keys that
// live only in the environment (BOXOFFICE_SECRETS_KEY).
//
// A keyring holds one or more keys, each named by an id. The first seals
// and MACs; every key opens and verifies, so a key can be rotated: put the
// new one first, keep the old after it, run `boxoffice migrate` (which
// reseals every stored secret under the first key), then drop the old one.
package atrest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySize is the length of a key, in bytes before base64.
const KeySize = 32

// prefix starts every sealed value, so a value left in clear by an older
// version is told apart from a sealed one.
const prefix = "sealed:"

// ErrOpen is returned for a sealed value that no key of the ring opens:
// sealed under a key since dropped, for another context, or altered.
var ErrOpen = errors.New("sealed secret does not open with any key in BOXOFFICE_SECRETS_KEY")

var keyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

type key struct {
	id   string
	aead cipher.AEAD
	mac  []byte
}

// Keyring seals, opens and MACs with an ordered list of keys.
type Keyring struct {
	keys []key
}

// Parse reads a keyring as BOXOFFICE_SECRETS_KEY spells it: comma-separated
// id:key entries, the key base64 of 32 random bytes (`openssl rand -base64
// 32`), the first entry the one that seals.
func Parse(s string) (*Keyring, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no keys")
	}
	ring := &Keyring{}
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(s, ",") {
		id, encoded, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("entry %q: want id:base64-key, the id of letters, digits, - or _ (at most 32)", redact(entry))
		}
		if seen[id] {
			return nil, fmt.Errorf("key id %q appears twice", id)
		}
		seen[id] = true
		raw, err := decodeKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", id, err)
		}
		k, err := newKey(id, raw)
		if err != nil {
			return nil, err
		}
		ring.keys = append(ring.keys, k)
	}
	return ring, nil
}

// UnmarshalText reads a keyring as Parse does, for configuration.
func (r *Keyring) UnmarshalText(b []byte) error {
	parsed, err := Parse(string(b))
	if err != nil {
		return err
	}
	*r = *parsed
	return nil
}

// New returns a keyring of one key, for tests and `dev`.
func New(id string, raw []byte) (*Keyring, error) {
	if !keyID.MatchString(id) {
		return nil, fmt.Errorf("key id %q: letters, digits, - or _ (at most 32)", id)
	}
	if len(raw) != KeySize {
		return nil, fmt.Errorf("key %q: %d bytes, want %d", id, len(raw), KeySize)
	}
	k, err := newKey(id, raw)
	if err != nil {
		return nil, err
	}
	return &Keyring{keys: []key{k}}, nil
}

// Generate returns a new random key entry, id:base64.
func Generate(id string) string {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails on supported platforms
	return id + ":" + base64.StdEncoding.EncodeToString(raw)
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.Strict().DecodeString(s); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("%d bytes, want %d (openssl rand -base64 32)", len(raw), KeySize)
			}
			return raw, nil
		}
	}
	return nil, errors.New("not base64 (openssl rand -base64 32)")
}

// newKey derives the key's cipher and MAC keys from it, so that no one key
// serves two purposes.
func newKey(id string, raw []byte) (key, error) {
	sealKey, err := hkdf.Key(sha256.New, raw, nil, "boxoffice at-rest seal", 32)
	if err != nil {
		return key{}, fmt.Errorf("derive key %q: %w", id, err)
	}
	macKey, err := hkdf.Key(sha256.New, raw, nil, "boxoffice at-rest mac", 32)
	if err != nil {
		return key{}, fmt.Errorf("derive key %q: %w", id, err)
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return key{}, fmt.Errorf("key %q: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("key %q: %w", id, err)
	}
	return key{id: id, aead: aead, mac: macKey}, nil
}

// redact keeps a key out of an error message: only the id part is shown.
func redact(entry string) string {
	id, _, _ := strings.Cut(strings.TrimSpace(entry), ":")
	return id + ":…"
}

// Seal encrypts plain under the first key, bound to context (say, the
// column and the row's id), so that a sealed value copied to another row
// does not open there. The result is sealed:id:base64(nonce‖ciphertext).
func (r *Keyring) Seal(plain, context string) string {
	k := r.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := k.aead.Seal(nonce, nonce, []byte(plain), []byte(context))
	return prefix + k.id + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// IsSealed reports whether v is a sealed value (under any key).
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// CurrentPrefix is how every value sealed under the first key starts, for
// finding in SQL the rows that still need resealing.
func (r *Keyring) CurrentPrefix() string { return prefix + r.keys[0].id + ":" }

// Open decrypts a value Seal made with context. A value that is not sealed
// (left in clear by a version before sealing, until `migrate` seals it) is
// returned as it is.
func (r *Keyring) Open(v, context string) (string, error) {
	if !IsSealed(v) {
		return v, nil
	}
	id, encoded, ok := strings.Cut(v[len(prefix):], ":")
	if !ok {
		return "", ErrOpen
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(encoded)
	if err != nil {
		return "", ErrOpen
	}
	for _, k := range r.keys {
		if k.id != id || len(raw) < k.aead.NonceSize() {
			continue
		}
		plain, err := k.aead.Open(nil, raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():], []byte(context))
		if err != nil {
			return "", ErrOpen
		}
		return string(plain), nil
	}
	return "", fmt.Errorf("%w (key %q is not in the ring)", ErrOpen, id)
}

// MAC is HMAC-SHA-256 of data under the first key's MAC key, for purpose.
func (r *Keyring) MAC(purpose string, data ...[]byte) []byte {
	return r.keys[0].sum(purpose, data)
}

// Verify reports whether mac is MAC(purpose, data) under any key of the
// ring, in time independent of where they differ.
func (r *Keyring) Verify(mac []byte, purpose string, data ...[]byte) bool {
	ok := false
	for _, k := range r.keys {
		if hmac.Equal(mac, k.sum(purpose, data)) {
			ok = true
		}
	}
	return ok
}

func (k key) sum(purpose string, data [][]byte) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	for _, d := range data {
		m.Write(d)
	}
	return m.Sum(nil)
}
