// Package waitingroom is the virtual waiting room: buyers join a product's
// queue, those present before the on-sale time are ordered by a verifiable
// draw and later arrivals queue in order, an admission controller lets them
// in at the rate the pipeline can serve, and signed tokens carry both the
// place in the queue and the admission. It owns the rooms, queue entries and
// admission steps; what it reads of other tables comes through Signals.
package waitingroom

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/google/uuid"
)

// The draw: each entrant's ticket is SHA-256(seed ‖ entry id bytes); the
// entrants are ordered by their tickets, ascending (ties, which SHA-256 makes
// practically impossible, by entry id). Position 1 is the smallest ticket.
// Before opening only SHA-256(seed) — the commitment — is public; after the
// draw the seed is revealed, and anyone holding the list of entry ids can
// recompute the order and check the commitment.

// NewSeed returns a fresh secret seed.
func NewSeed() []byte {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	return seed
}

// Commitment is the hex SHA-256 of the seed, published before opening.
func Commitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// Ticket is an entrant's draw ticket.
func Ticket(seed []byte, id uuid.UUID) []byte {
	h := sha256.New()
	h.Write(seed)
	h.Write(id[:])
	return h.Sum(nil)
}

// Draw orders the entry ids by their tickets; the first is position 1.
func Draw(seed []byte, ids []uuid.UUID) []uuid.UUID {
	type ticketed struct {
		id uuid.UUID
		t  []byte
	}
	all := make([]ticketed, len(ids))
	for i, id := range ids {
		all[i] = ticketed{id, Ticket(seed, id)}
	}
	slices.SortFunc(all, func(a, b ticketed) int {
		if c := bytes.Compare(a.t, b.t); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	out := make([]uuid.UUID, len(all))
	for i, x := range all {
		out[i] = x.id
	}
	return out
}
