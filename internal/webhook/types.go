// Package webhook delivers BoxOffice's events to the tenants' own systems:
// endpoints a tenant subscribes to event types, the fan-out of the outbox's
// events to them, and their delivery by River jobs, signed the Standard
// Webhooks way (webhook-id, webhook-timestamp, webhook-signature), retried
// with backoff for about a day, and logged per attempt.
package webhook

import (
	"encoding/json"
	"slices"

	"boxoffice/internal/outbox"
)

// EventType is one kind of event an endpoint may subscribe to.
type EventType struct {
	Name        string `json:"name" doc:"As in the delivery's type field"`
	Description string `json:"description"`
}

// TestType is the type of the event "send a test event" delivers.
const TestType = "webhook.test"

// Types are the event types tenants receive, in the order the console
// lists them. data is the event's payload as documented in docs/webhooks.md.
var Types = []EventType{
	{"order.confirmed", "An order was paid: its tickets are issued (data: orderId, orderRef — the reference the buyer's e-mails print —, productId, buyerId, email, tickets)"},
	{"order.refunded", "Money went back to the buyer for some or all tickets (data: orderId, refundId, amountCents, orderStatus, reason)"},
	{"order.cancelled", "An order was cancelled and refunded: by the buyer, or with its date (data as order.refunded)"},
	{"ticket.checked_in", "A ticket was scanned in at the door (data: ticketId, orderId, productId, number, checkedInAt)"},
	{"ticket.transferred", "A ticket was given to someone else: the old one is void (data: transferId, orderId, productId, number)"},
	{"hold.expired", "A hold ran out before checkout: its numbers are free again (data: holdId, requestId, productId, buyerId, numbers)"},
	{"hold.released", "A buyer let a hold go (data as hold.expired)"},
	{"product.sold_out", "The last free number of a product was taken (data: productId); holds that run out free numbers again"},
	{"waitlist.offered", "Numbers that came back were offered to the next buyer on the waiting list (data: entryId, productId, quantity, expiresAt)"},
	{"sale.paused", "The organiser paused admission from the waiting room (data: productId)"},
	{"sale.resumed", "Admission from the waiting room resumed (data: productId)"},
	{"event.changed", "A date's time or venue changed; its ticket holders are told (data: productId, changeId, what)"},
	{"event.cancelled", "A date was cancelled: its orders are refunded (data: productId, reason)"},
	{TestType, "Sent by \"send a test event\" only, whatever the subscription (data: endpointId, message)"},
}

// KnownType reports whether name is an event type an endpoint may name.
func KnownType(name string) bool {
	return slices.ContainsFunc(Types, func(t EventType) bool { return t.Name == name })
}

// TypeOf is the public type of an outbox event, or "" for the events kept
// inside BoxOffice. A refund that ends its order CANCELLED is an
// order.cancelled.
func TypeOf(ev outbox.Event) string {
	switch ev.Topic {
	case "order.refunded":
		var p struct {
			OrderStatus string `json:"orderStatus"`
		}
		if json.Unmarshal(ev.Payload, &p) == nil && p.OrderStatus == "CANCELLED" {
			return "order.cancelled"
		}
		return ev.Topic
	case TestType:
		return ""
	}
	if KnownType(ev.Topic) {
		return ev.Topic
	}
	return ""
}

// subscribed reports whether an endpoint with types (none: all) receives t.
func subscribed(types []string, t string) bool {
	return len(types) == 0 || slices.Contains(types, t)
}
