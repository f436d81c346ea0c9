package ticket

import (
	"errors"
	"testing"

	"github.com/google/uuid"
)

// A code verifies for its own ticket only, and has one spelling: the last
// character's unused bits changed make another code, refused.
func TestCode(t *testing.T) {
	s := NewSigner([]byte("a ticket secret of 32 bytes or more"))
	id, product := uuid.New(), uuid.New()
	code := s.Code(id, product, 7)
	if got, err := Parse(code); err != nil || got != id {
		t.Fatalf("Parse(%q) = %v, %v", code, got, err)
	}
	if err := s.Verify(code, product, 7); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if err := s.Verify(code, product, 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("another number's ticket: %v, want ErrInvalid", err)
	}
	// One character of the signature changed (it starts at the 23rd).
	other := []byte(code)
	if other[30] == 'A' {
		other[30] = 'B'
	} else {
		other[30] = 'A'
	}
	unused := code[:len(code)-1] + string(code[len(code)-1]+1)
	for name, bad := range map[string]string{
		"another signature": string(other),
		"unused bits":       unused,
		"a character less":  code[:len(code)-1],
	} {
		if err := s.Verify(bad, product, 7); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify(%q) = %v, want ErrInvalid", name, bad, err)
		}
	}
	if _, err := Parse(unused); !errors.Is(err, ErrInvalid) {
		t.Errorf("Parse took a code with its unused bits set: %v", err)
	}
}
