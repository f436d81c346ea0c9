package workers

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"boxoffice/internal/checkout"
)

// Payment workers are thin: each calls one checkout step. Provider calls are
// bounded by the provider client's own timeout.

// AuthorizeWorker authorizes a payment attempt.
type AuthorizeWorker struct {
	river.WorkerDefaults[checkout.AuthorizeArgs]
	Checkout *checkout.Service
}

// Work authorizes.
func (w *AuthorizeWorker) Work(ctx context.Context, job *river.Job[checkout.AuthorizeArgs]) error {
	return w.Checkout.Authorize(ctx, job.Args.AttemptID)
}

// ResolveWorker resolves an unknown payment outcome.
type ResolveWorker struct {
	river.WorkerDefaults[checkout.ResolveArgs]
	Checkout *checkout.Service
}

// Work resolves.
func (w *ResolveWorker) Work(ctx context.Context, job *river.Job[checkout.ResolveArgs]) error {
	return w.Checkout.Resolve(ctx, job.Args.AttemptID)
}

// NextRetry asks again soon at first and then backs off, capped at a minute:
// the shopper is waiting on the answer.
func (w *ResolveWorker) NextRetry(job *river.Job[checkout.ResolveArgs]) time.Time {
	return soonThenAMinute(job.Attempt)
}

// soonThenAMinute is the retry time of a question to the provider: attempt²
// seconds from now, at most a minute.
func soonThenAMinute(attempt int) time.Time {
	return time.Now().Add(min(time.Duration(attempt*attempt)*time.Second, time.Minute))
}

// CaptureWorker captures a confirmed order.
type CaptureWorker struct {
	river.WorkerDefaults[checkout.CaptureArgs]
	Checkout *checkout.Service
}

// Work captures.
func (w *CaptureWorker) Work(ctx context.Context, job *river.Job[checkout.CaptureArgs]) error {
	return w.Checkout.Capture(ctx, job.Args.OrderID)
}

// NextRetry backs off from a second, capped at five minutes.
func (w *CaptureWorker) NextRetry(job *river.Job[checkout.CaptureArgs]) time.Time {
	return time.Now().Add(min(time.Duration(job.Attempt*job.Attempt)*time.Second, 5*time.Minute))
}

// VoidWorker voids an unused authorization.
type VoidWorker struct {
	river.WorkerDefaults[checkout.VoidArgs]
	Checkout *checkout.Service
}

// Work voids.
func (w *VoidWorker) Work(ctx context.Context, job *river.Job[checkout.VoidArgs]) error {
	return w.Checkout.Void(ctx, job.Args.AttemptID)
}

// WebhookWorker processes a stored provider event.
type WebhookWorker struct {
	river.WorkerDefaults[checkout.WebhookArgs]
	Checkout *checkout.Service
}

// Work processes the event.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[checkout.WebhookArgs]) error {
	return w.Checkout.ProcessWebhook(ctx, job.Args.Provider, job.Args.EventID)
}

// SendTicketsWorker mails a confirmed order's tickets.
type SendTicketsWorker struct {
	river.WorkerDefaults[checkout.SendTicketsArgs]
	Checkout *checkout.Service
}

// Work sends the mail.
func (w *SendTicketsWorker) Work(ctx context.Context, job *river.Job[checkout.SendTicketsArgs]) error {
	return w.Checkout.SendTickets(ctx, job.Args.OrderID, job.Args.Resend)
}

// RefundWorker makes (or asks about) a refund at the provider.
type RefundWorker struct {
	river.WorkerDefaults[checkout.RefundArgs]
	Checkout *checkout.Service
}

// Work refunds; a payment whose capture has not landed yet is waited for.
func (w *RefundWorker) Work(ctx context.Context, job *river.Job[checkout.RefundArgs]) error {
	err := w.Checkout.ProcessRefund(ctx, job.Args.RefundID)
	if errors.Is(err, checkout.ErrNotCaptured) {
		return river.JobSnooze(5 * time.Second)
	}
	return err
}

// NextRetry asks again soon at first and then backs off, capped at a
// minute: an unknown outcome is resolved by asking with the same key.
func (w *RefundWorker) NextRetry(job *river.Job[checkout.RefundArgs]) time.Time {
	return soonThenAMinute(job.Attempt)
}

// SendRefundNoticeWorker tells a buyer that money is on its way back.
type SendRefundNoticeWorker struct {
	river.WorkerDefaults[checkout.SendRefundNoticeArgs]
	Checkout *checkout.Service
}

// Work sends the mail.
func (w *SendRefundNoticeWorker) Work(ctx context.Context, job *river.Job[checkout.SendRefundNoticeArgs]) error {
	return w.Checkout.SendRefundNotice(ctx, job.Args.RefundID)
}

// NotifyChangeWorker tells ticket holders that a date or venue changed.
type NotifyChangeWorker struct {
	river.WorkerDefaults[checkout.NotifyChangeArgs]
	Checkout *checkout.Service
}

// Work sends the mails.
func (w *NotifyChangeWorker) Work(ctx context.Context, job *river.Job[checkout.NotifyChangeArgs]) error {
	return w.Checkout.NotifyChange(ctx, job.Args)
}

// CancelDateWorker refunds the orders of a cancelled date.
type CancelDateWorker struct {
	river.WorkerDefaults[checkout.CancelDateArgs]
	Checkout *checkout.Service
}

// Work refunds what is left to refund and mails the buyers; while orders
// are still being paid for, it looks again in a few seconds.
func (w *CancelDateWorker) Work(ctx context.Context, job *river.Job[checkout.CancelDateArgs]) error {
	err := w.Checkout.ProcessCancellation(ctx, job.Args.ProductID)
	if errors.Is(err, checkout.ErrCancellationWaiting) {
		return river.JobSnooze(5 * time.Second)
	}
	return err
}

// Timeout gives a date of many orders room: each refund is its own short
// transaction, and a job cut off resumes where it stopped.
func (w *CancelDateWorker) Timeout(*river.Job[checkout.CancelDateArgs]) time.Duration {
	return 10 * time.Minute
}

// SendTransferWorker mails a transferred ticket to its receiver.
type SendTransferWorker struct {
	river.WorkerDefaults[checkout.SendTransferArgs]
	Checkout *checkout.Service
}

// Work sends the mail.
func (w *SendTransferWorker) Work(ctx context.Context, job *river.Job[checkout.SendTransferArgs]) error {
	return w.Checkout.SendTransfer(ctx, job.Args.TransferID)
}

// SendOfferWorker mails a waiting-list offer.
type SendOfferWorker struct {
	river.WorkerDefaults[checkout.SendOfferArgs]
	Checkout *checkout.Service
}

// Work sends the mail.
func (w *SendOfferWorker) Work(ctx context.Context, job *river.Job[checkout.SendOfferArgs]) error {
	return w.Checkout.SendOffer(ctx, job.Args.EntryID)
}

func addPaymentWorkers(w *river.Workers, c *checkout.Service) {
	river.AddWorker(w, &SendTransferWorker{Checkout: c})
	river.AddWorker(w, &SendOfferWorker{Checkout: c})
	river.AddWorker(w, &CancelDateWorker{Checkout: c})
	river.AddWorker(w, &NotifyChangeWorker{Checkout: c})
	river.AddWorker(w, &RefundWorker{Checkout: c})
	river.AddWorker(w, &SendRefundNoticeWorker{Checkout: c})
	river.AddWorker(w, &SendTicketsWorker{Checkout: c})
	river.AddWorker(w, &AuthorizeWorker{Checkout: c})
	river.AddWorker(w, &ResolveWorker{Checkout: c})
	river.AddWorker(w, &CaptureWorker{Checkout: c})
	river.AddWorker(w, &VoidWorker{Checkout: c})
	river.AddWorker(w, &WebhookWorker{Checkout: c})
}
