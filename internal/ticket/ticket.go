// Package ticket issues and verifies ticket codes: a ticket id followed by an
// HMAC over the ticket's id, product and number, so that BoxOffice (or a gate
// holding the secret) can tell a real ticket from a forged one.
package ticket

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"

	"github.com/google/uuid"
)

// ErrInvalid is returned for a code that is malformed or not signed by us.
var ErrInvalid = errors.New("invalid ticket code")

// Signer signs and verifies ticket codes with one secret.
type Signer struct{ secret []byte }

// NewSigner returns a Signer; the secret must stay stable for issued
// tickets to verify.
func NewSigner(secret []byte) *Signer { return &Signer{secret: secret} }

func (s *Signer) mac(id, product uuid.UUID, number int32) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write(id[:])
	m.Write(product[:])
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(number))
	m.Write(n[:])
	return m.Sum(nil)[:16]
}

// Code returns the code of a ticket.
func (s *Signer) Code(id, product uuid.UUID, number int32) string {
	return base64.RawURLEncoding.EncodeToString(append(id[:], s.mac(id, product, number)...))
}

// Parse returns the ticket id in code; Verify must still check the mac
// against the ticket's product and number.
func Parse(code string) (uuid.UUID, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(code)
	if err != nil || len(raw) != 32 {
		return uuid.Nil, ErrInvalid
	}
	return uuid.UUID(raw[:16]), nil
}

// Verify checks that code is the signed code of the ticket.
func (s *Signer) Verify(code string, product uuid.UUID, number int32) error {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(code)
	if err != nil || len(raw) != 32 {
		return ErrInvalid
	}
	if !hmac.Equal(raw[16:], s.mac(uuid.UUID(raw[:16]), product, number)) {
		return ErrInvalid
	}
	return nil
}
