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

// A date cancelled after 500 sales, the worker running the cancellation
// SIGKILLed while it mails the buyers: the other worker resumes the job,
// every order is refunded once at the provider and every buyer mailed,
// a duplicate only for the mail in flight at the kill.
func TestDateCancellationWorkerKilled(t *testing.T) {
	r := fleet.DateCancelKill(t)
	t.Logf("%d orders: the worker killed after %d buyers were mailed; all refunded and mailed %s after the kill, %d duplicate mails",
		r.Orders, r.MailedBeforeKill, r.DoneAfterKill, r.Duplicates)
}
