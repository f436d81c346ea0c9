package db

import (
	"encoding/hex"

	"github.com/google/uuid"
)

// NewID returns a time-ordered UUID (version 7). Rows written in bursts —
// requests, holds — land next to each other in their primary-key index
// instead of on random pages.
func NewID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil { // only when the random source fails
		return uuid.New()
	}
	return id
}

// ShortRef is the part of an id people read out: its last eight hex
// digits. Of a time-ordered id they are random, where its first eight are
// its time, shared by every id made in the same minute.
func ShortRef(id uuid.UUID) string {
	s := id.String()
	return s[len(s)-8:]
}

// AppendID appends id's text form (what id.String returns) to b, for the
// request path's lines and keys, which would otherwise make the string
// and copy it.
func AppendID(b []byte, id uuid.UUID) []byte {
	b = hex.AppendEncode(b, id[:4])
	for _, part := range [][]byte{id[4:6], id[6:8], id[8:10], id[10:]} {
		b = hex.AppendEncode(append(b, '-'), part)
	}
	return b
}
