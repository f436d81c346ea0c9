package waitingroom

import "math"

// AdmitInput is what one admission step knows.
type AdmitInput struct {
	// Rate is λ = activeShoppers ÷ shoppingSeconds, already lowered by the
	// feedback factor.
	Rate float64
	// Seconds since the last step.
	Seconds float64
	// Carry is the fraction of an admission left over from the last step.
	Carry float64
	// Active shoppers (admitted, token not expired, not finished); Capacity
	// is the configured number the pipeline serves at once.
	Active, Capacity int64
	// Waiting is how many placed entrants are not admitted yet.
	Waiting int64
	// Wanted is how many numbers the active shoppers may still take: each
	// the per-buyer limit less what already counts against it.
	Wanted int64
	// Available numbers, and the most one shopper may take.
	Available, PerBuyer int64
}

// Admit decides how many to admit now, the carry for the next step, and
// why fewer than the rate allows (empty when not held back). Admission
// follows the rate (Little's law), never exceeds free shopper slots, and
// stops when the stock left cannot serve the shoppers already in.
func Admit(in AdmitInput) (n int64, carry float64, reason string) {
	want := in.Rate*in.Seconds + in.Carry
	n = int64(math.Floor(want))
	carry = want - float64(n)
	switch {
	case in.Available <= 0:
		return 0, 0, "sold out"
	case in.Wanted >= in.Available:
		return 0, 0, "stock left is spoken for by shoppers already admitted"
	}
	if free := in.Capacity - in.Active; n > free {
		n, carry, reason = max(free, 0), 0, "all shopper slots busy"
	}
	// Admit no more than the stock the shoppers already in cannot take can
	// serve at the per-buyer limit, counting a last few numbers fewer than
	// the limit as one shopper's: otherwise they would never be offered to
	// anyone.
	per := max(in.PerBuyer, 1)
	if room := (in.Available - in.Wanted + per - 1) / per; n > room {
		n, carry, reason = max(room, 0), 0, "stock left is spoken for by shoppers already admitted"
	}
	if n > in.Waiting {
		n, carry = in.Waiting, 0
	}
	return n, carry, reason
}
