package faults_test

import (
	"testing"

	"boxoffice/internal/fleet"
)

// A worker SIGKILLed while it waits on the payment provider: its payment
// jobs once stayed `running` for five minutes, long enough for 60-second
// holds to lapse and authorizations to be voided. Now the other worker picks
// them up at once; every order is confirmed, none twice.
func TestPaymentWorkerKilled(t *testing.T) {
	r := fleet.PaymentWorkerKill(t)
	t.Logf("payment worker killed mid-authorization: all %d orders confirmed %s after the kill",
		r.Orders, r.ConfirmedAfterKill)
}
