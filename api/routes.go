package api

// routes is the route table: every route the API serves, one line each —
// the pages and the live stream (plain Fiber), then the operations of the
// API document (route: tag, method, path, operation id, handler, then who
// may call it, its status, body limit and errors). Each handler is a method
// of Server in the file of its resource; summaries and descriptions are in
// operations.go. Checkout and the waiting room exist only when the process
// has them.
func (s *Server) routes() {
	// Pages the binary serves itself (server.go, console.go, ops.go)
	s.app.Use("/docs", docsPages())
	s.app.Get("/openapi.json", s.openAPI("json"))
	s.app.Get("/openapi.yaml", s.openAPI("yaml"))
	s.app.Get("/livez", livez)
	s.app.Get("/healthz", livez) // the older name
	s.app.Get("/readyz", s.readyz)
	s.app.Use("/console", s.consoleHeaders(), consolePages())
	if ui := s.riverUI(); ui != nil {
		s.app.All("/ops/river", s.requireAdminBasic, sameOriginJSON, ui)
		s.app.All("/ops/river/*", s.requireAdminBasic, sameOriginJSON, ui)
	}

	// Tenants (tenants.go)
	route(s, "Tenants", post, "/v1/tenants", "create-tenant", s.createTenant, by(schemeAdmin), status(201), body(maxSmallBody), errs(401, 409, 422))
	route(s, "Tenants", put, "/v1/tenants/{id}/quota", "set-tenant-quota", s.setTenantQuota, by(schemeAdmin), status(204), body(maxSmallBody), errs(401, 404, 422))

	// Console sign-in (console.go)
	route(s, "Console", post, "/v1/console/session", "console-sign-in", s.consoleSignIn, status(201), body(maxSmallBody), errs(401, 422, 503))
	route(s, "Console", get, "/v1/console/session", "console-session", s.consoleWhoAmI, by(schemeAdmin, schemeOperator), errs(401))
	route(s, "Console", del, "/v1/console/session", "console-sign-out", s.consoleSignOut, by(schemeAdmin, schemeOperator), status(204), errs(401, 403))

	// Events (events.go): the show, its venue and its dates (products)
	route(s, "Events", post, "/v1/events", "create-event", s.createEvent, by(schemeAPI), status(201), body(maxSmallBody), errs(401, 403, 409, 422))
	route(s, "Events", get, "/v1/events", "list-events", s.listEvents, by(schemeAPI, schemeOperator), errs(401, 403))
	route(s, "Events", get, "/v1/events/{id}", "get-event", s.getEvent, by(schemeAPI, schemeOperator), errs(401, 403, 404))
	route(s, "Events", patch, "/v1/events/{id}", "update-event", s.updateEvent, by(schemeAPI), body(maxSmallBody), errs(401, 403, 404, 422))

	// Products and availability (products.go)
	route(s, "Products", post, "/v1/products", "create-product", s.createProduct, by(schemeAPI), status(201), body(maxProductBody), errs(401, 403, 409, 422))
	route(s, "Products", get, "/v1/products", "list-products", s.listProducts, by(schemeAPI), errs(401, 403))
	route(s, "Products", get, "/v1/products/{id}", "get-product", s.getProduct, by(schemeAPI, schemeBuyer), errs(401, 403, 404))
	route(s, "Products", get, "/v1/products/{id}/availability", "get-availability", s.getAvailability, responses(encodedResponse[Availability](s, "The counters and bitmap (gzipped when the request accepts gzip)")), errs(404), conditional())
	route(s, "Products", get, "/v1/products/{id}/availability/pages/{page}", "get-availability-page", s.getAvailabilityPage, responses(encodedResponse[AvailabilityPage](s, "One page of the bitmap (gzipped when the request accepts gzip)")), errs(404), conditional())

	// Stores (store.go): public catalog, the tenant admin's store settings
	// and product changes
	route(s, "Store", get, "/v1/stores/{tenantSlug}", "get-store", s.getStore, errs(404), conditional())
	route(s, "Store", get, "/v1/stores/{tenantSlug}/products", "list-store-products", s.listStoreProducts, errs(404), conditional())
	route(s, "Store", post, "/v1/stores/{tenantSlug}/login", "store-login", s.startLogin, status(202), body(maxSmallBody), errs(403, 404, 422, 429, 503))
	route(s, "Store", post, "/v1/stores/{tenantSlug}/login/challenge", "store-login-challenge", s.loginChallenge, body(maxSmallBody), errs(404, 422))
	route(s, "Store", post, "/v1/stores/{tenantSlug}/login/verify", "store-login-verify", s.verifyLogin, body(maxSmallBody), errs(401, 404, 422, 429))
	route(s, "Store", post, "/v1/store/logo", "store-logo-upload", s.logoUpload, by(schemeAPI), body(maxSmallBody), errs(401, 403, 422, 503))
	route(s, "Store", post, "/v1/store/images", "store-image-upload", s.imageUpload, by(schemeAPI), body(maxSmallBody), errs(401, 403, 422, 429, 503))
	route(s, "Store", put, "/v1/store", "put-store", s.putStore, by(schemeAPI), body(maxSmallBody), errs(401, 403, 409, 422))
	route(s, "Store", post, "/v1/store/publish", "publish-store", s.publishStore, by(schemeAPI), status(202), errs(401, 403, 503))
	route(s, "Products", patch, "/v1/products/{id}", "update-product", s.updateProduct, by(schemeAPI), body(maxSmallBody), errs(401, 403, 404, 409, 422))

	// Live availability (stream.go): a plain Fiber route, described in the
	// OpenAPI document
	s.app.Get("/v1/products/:id/availability/stream", s.availabilityStream)
	s.api.OpenAPI().AddOperation(streamOperation())

	// Seat maps (layout.go)
	route(s, "Products", get, "/v1/products/{id}/layout", "get-layout", s.getLayout, responses(encodedResponse[LayoutView](s, "The plan (gzipped when the request accepts gzip)")), errs(404), conditional())
	route(s, "Products", put, "/v1/products/{id}/layout", "put-layout", s.putLayout, by(schemeAPI), body(maxSeatMapBody), errs(401, 403, 404, 409, 422))
	route(s, "Products", put, "/v1/products/{id}/seat-map", "put-seat-map", s.putSeatMap, by(schemeAPI), body(maxSeatMapBody), errs(401, 403, 404, 409, 422))

	// Reservations and holds (reservations.go)
	route(s, "Reservations", post, "/v1/products/{id}/reservations", "create-reservation", s.createReservation, by(schemeBuyer), status(202), body(maxSmallBody), errs(400, 401, 403, 404, 409, 413, 422), replayed(), decides())
	route(s, "Reservations", get, "/v1/reservations/{id}", "get-reservation", s.getReservation, by(schemeBuyer, schemeAPI), errs(401, 403, 404))
	route(s, "Reservations", del, "/v1/holds/{id}", "release-hold", s.releaseHold, by(schemeBuyer), errs(401, 404, 409))

	// Discount and presale codes (codes.go)
	route(s, "Codes", post, "/v1/code-lists", "create-code-list", s.createCodeList, by(schemeAPI), status(201), body(maxProductBody), errs(401, 403, 404, 409, 422))
	route(s, "Codes", get, "/v1/code-lists", "list-code-lists", s.listCodeLists, by(schemeAPI, schemeOperator), errs(401, 403))
	route(s, "Codes", post, "/v1/code-lists/{id}/codes", "add-codes", s.addCodes, by(schemeAPI), body(maxProductBody), errs(401, 403, 404, 409, 422))
	route(s, "Codes", get, "/v1/code-lists/{id}/codes.csv", "codes-csv", s.codesCSV, by(schemeAPI, schemeOperator), responses(csvResponse("Each code with its uses")), errs(401, 403, 404))

	// Waiting lists of sold-out products (waitlist.go)
	route(s, "Waiting list", post, "/v1/products/{id}/waitlist", "join-waitlist", s.joinWaitlist, by(schemeBuyer), status(201), body(maxSmallBody), errs(401, 404, 409, 422), replayed())
	route(s, "Waiting list", get, "/v1/products/{id}/waitlist", "get-waitlist", s.getWaitlist, by(schemeBuyer), errs(401, 404))
	route(s, "Waiting list", del, "/v1/products/{id}/waitlist", "leave-waitlist", s.leaveWaitlist, by(schemeBuyer), status(204), errs(401, 404))
	route(s, "Waiting list", get, "/v1/products/{id}/waitlist/summary", "waitlist-summary", s.waitlistSummary, by(schemeAPI, schemeOperator), errs(401, 403, 404))

	// Operations (ops.go)
	route(s, "Operations", get, "/v1/ops/queues", "ops-queues", s.opsQueues, by(schemeAdmin, schemeOperator), errs(401, 403))
	route(s, "Operations", get, "/v1/ops/dlq", "ops-dlq", s.opsDlq, by(schemeAdmin, schemeOperator), errs(401, 403))
	route(s, "Operations", post, "/v1/ops/dlq/redrive", "ops-dlq-redrive", s.opsDlqRedrive, by(schemeAdmin, schemeOperator), errs(401, 403, 409))
	route(s, "Operations", get, "/v1/ops/river/discarded", "ops-river-discarded", s.opsRiverDiscarded, by(schemeAdmin, schemeOperator), errs(401, 403))
	route(s, "Operations", post, "/v1/ops/river/jobs/{id}/retry", "ops-river-retry", s.opsRiverRetry, by(schemeAdmin, schemeOperator), errs(401, 403, 404))

	route(s, "Operations", get, "/v1/ops/sales", "list-sales", s.listSales, by(schemeAdmin, schemeOperator), errs(401, 403))
	route(s, "Operations", get, "/v1/ops/sales/{id}", "get-sale", s.getSale, by(schemeAdmin, schemeOperator), errs(401, 403, 404))
	s.app.Get("/v1/ops/sales/:id/stream", s.saleStream)
	s.api.OpenAPI().AddOperation(saleStreamOperation())
	route(s, "Operations", get, "/v1/products/{id}/report", "sales-report", s.salesReport, by(schemeAdmin, schemeOperator), errs(401, 403, 404))
	route(s, "Operations", get, "/v1/products/{id}/report.csv", "sales-report-csv", s.salesReportCSV, by(schemeAdmin, schemeOperator), responses(csvResponse("The report's minutes, one line each")), errs(401, 403, 404))
	// Rehearsals (rehearsals.go)
	route(s, "Rehearsals", post, "/v1/products/{id}/rehearsals", "start-rehearsal", s.startRehearsal, by(schemeAPI), status(202), body(maxSmallBody), errs(401, 403, 404, 409, 422, 503))
	route(s, "Rehearsals", get, "/v1/products/{id}/rehearsals", "list-rehearsals", s.listRehearsals, by(schemeAPI, schemeOperator), errs(401, 403, 404, 503))
	route(s, "Rehearsals", get, "/v1/rehearsals/{id}", "get-rehearsal", s.getRehearsal, by(schemeAPI, schemeOperator), errs(401, 403, 404, 503))

	route(s, "Operations", get, "/v1/audit", "list-audit", s.listAudit, by(schemeAdmin, schemeOperator), errs(401, 403))

	// API keys and buyer-token secrets (keys.go)
	route(s, "Tenants", post, "/v1/tenants/{id}/api-keys", "create-api-key", s.createApiKey, by(schemeAdmin, schemeAPI), status(201), body(maxSmallBody), errs(401, 403, 404, 422))
	route(s, "Tenants", get, "/v1/tenants/{id}/api-keys", "list-api-keys", s.listApiKeys, by(schemeAdmin, schemeAPI), errs(401, 403, 404))
	route(s, "Tenants", del, "/v1/tenants/{id}/api-keys/{keyId}", "revoke-api-key", s.revokeApiKey, by(schemeAdmin, schemeAPI), status(204), errs(401, 403, 404))
	route(s, "Tenants", put, "/v1/tenants/{id}/identity-provider", "put-identity-provider", s.putIdentityProvider, by(schemeAdmin, schemeAPI), body(maxSmallBody), errs(401, 403, 404, 409, 422))
	route(s, "Tenants", get, "/v1/tenants/{id}/identity-provider", "get-identity-provider", s.getIdentityProvider, by(schemeAdmin, schemeAPI), errs(401, 403, 404))
	route(s, "Tenants", del, "/v1/tenants/{id}/identity-provider", "delete-identity-provider", s.deleteIdentityProvider, by(schemeAdmin, schemeAPI), status(204), errs(401, 403, 404))
	route(s, "Tenants", post, "/v1/tenants/{id}/buyer-token-secret/rotate", "rotate-buyer-token-secret", s.rotateBuyerTokenSecret, by(schemeAdmin, schemeAPI), body(maxSmallBody), errs(401, 403, 404, 422))

	// Webhooks to tenants (webhooks.go)
	if s.Webhooks != nil {
		route(s, "Webhooks", get, "/v1/webhook-event-types", "list-webhook-event-types", s.listWebhookEventTypes, by(schemeAdmin, schemeAPI), errs(401, 403))
		route(s, "Webhooks", post, "/v1/tenants/{id}/webhooks", "create-webhook-endpoint", s.createWebhookEndpoint, by(schemeAdmin, schemeAPI), status(201), body(maxSmallBody), errs(401, 403, 404, 409, 422))
		route(s, "Webhooks", get, "/v1/tenants/{id}/webhooks", "list-webhook-endpoints", s.listWebhookEndpoints, by(schemeAdmin, schemeAPI), errs(401, 403, 404))
		route(s, "Webhooks", get, "/v1/tenants/{id}/webhooks/{endpointId}", "get-webhook-endpoint", s.getWebhookEndpoint, by(schemeAdmin, schemeAPI), errs(401, 403, 404))
		route(s, "Webhooks", patch, "/v1/tenants/{id}/webhooks/{endpointId}", "update-webhook-endpoint", s.updateWebhookEndpoint, by(schemeAdmin, schemeAPI), body(maxSmallBody), errs(401, 403, 404, 422))
		route(s, "Webhooks", del, "/v1/tenants/{id}/webhooks/{endpointId}", "delete-webhook-endpoint", s.deleteWebhookEndpoint, by(schemeAdmin, schemeAPI), status(204), errs(401, 403, 404))
		route(s, "Webhooks", post, "/v1/tenants/{id}/webhooks/{endpointId}/secret/rotate", "rotate-webhook-secret", s.rotateWebhookSecret, by(schemeAdmin, schemeAPI), body(maxSmallBody), errs(401, 403, 404, 422))
		route(s, "Webhooks", post, "/v1/tenants/{id}/webhooks/{endpointId}/test", "test-webhook-endpoint", s.testWebhookEndpoint, by(schemeAdmin, schemeAPI), status(202), errs(401, 403, 404, 409))
		route(s, "Webhooks", get, "/v1/tenants/{id}/webhooks/{endpointId}/deliveries", "list-webhook-deliveries", s.listWebhookDeliveries, by(schemeAdmin, schemeAPI), errs(401, 403, 404, 422))
		route(s, "Webhooks", get, "/v1/tenants/{id}/webhooks/{endpointId}/deliveries/{deliveryId}", "get-webhook-delivery", s.getWebhookDelivery, by(schemeAdmin, schemeAPI), errs(401, 403, 404))
		route(s, "Webhooks", post, "/v1/tenants/{id}/webhooks/{endpointId}/deliveries/{deliveryId}/redeliver", "redeliver-webhook", s.redeliverWebhook, by(schemeAdmin, schemeAPI), status(202), errs(401, 403, 404, 409))
	}

	// Checkout and tickets (with a payment provider) (orders.go)
	if s.Checkout != nil {
		route(s, "Checkout", post, "/v1/orders", "create-order", s.createOrder, by(schemeBuyer), status(202), body(maxSmallBody), errs(400, 401, 403, 404, 409, 422, 503), replayed())
		route(s, "Checkout", get, "/v1/orders/{id}", "get-order", s.getOrder, by(schemeBuyer, schemeAPI), errs(401, 403, 404))
		route(s, "Checkout", post, "/v1/webhooks/payments/{provider}", "payment-webhook", s.paymentWebhook, body(maxSmallBody), errs(400, 401, 404))
		route(s, "Checkout", get, "/v1/tickets/verify", "verify-ticket", s.verifyTicket, by(schemeAPI, schemeOperator), errs(401, 403))
		route(s, "Checkout", post, "/v1/tickets/check-in", "check-in-ticket", s.checkInTicket, by(schemeAPI, schemeOperator), errs(401, 403, 422))
		route(s, "Operations", get, "/v1/ops/checkout", "ops-checkout", s.opsCheckout, by(schemeAdmin, schemeOperator), errs(401, 403))
		route(s, "Operations", post, "/v1/ops/checkout/pause", "ops-checkout-pause", s.opsCheckoutPause, by(schemeAdmin, schemeOperator), errs(401, 403))
		route(s, "Operations", post, "/v1/ops/checkout/resume", "ops-checkout-resume", s.opsCheckoutResume, by(schemeAdmin, schemeOperator), errs(401, 403))
		route(s, "Checkout", get, "/v1/orders", "list-orders", s.listOrders, by(schemeBuyer), errs(401))
		route(s, "Checkout", get, "/v1/tenant/orders", "search-orders", s.searchOrders, by(schemeAPI, schemeOperator), errs(401, 403, 422))
		route(s, "Checkout", get, "/v1/tenant/orders/{id}", "order-timeline", s.orderTimeline, by(schemeAPI, schemeOperator), errs(401, 403, 404))
		route(s, "Refunds", post, "/v1/tenant/orders/{id}/refunds", "refund-order", s.refundOrder, by(schemeAPI), status(202), body(maxSmallBody), errs(400, 401, 403, 404, 409, 422, 503))
		route(s, "Refunds", get, "/v1/tenant/refunds/{id}", "get-refund", s.getRefund, by(schemeAPI, schemeOperator), errs(401, 403, 404))
		route(s, "Refunds", post, "/v1/tenant/refunds/{id}/retry", "retry-refund", s.retryRefund, by(schemeAPI), errs(401, 403, 404, 409, 503))
		route(s, "Refunds", post, "/v1/tenant/refunds/{id}/settle", "settle-refund", s.settleRefund, by(schemeAPI), body(maxSmallBody), errs(401, 403, 404, 409, 422, 503))
		route(s, "Refunds", post, "/v1/tenant/orders/{id}/tickets/resend", "resend-tickets", s.resendTickets, by(schemeAPI), status(202), errs(401, 403, 404, 409))
		route(s, "Checkout", get, "/v1/products/{id}/attendees.csv", "attendees-csv", s.attendeesCSV, by(schemeAPI, schemeOperator), responses(csvResponse("One line per ticket issued, with its order")), errs(401, 403, 404))
		route(s, "Refunds", post, "/v1/products/{id}/cancellation", "cancel-date", s.cancelDate, by(schemeAPI), status(202), body(maxSmallBody), errs(401, 403, 404, 422, 503))
		route(s, "Refunds", get, "/v1/products/{id}/cancellation", "date-cancellation", s.dateCancellation, by(schemeAPI, schemeOperator), errs(401, 403, 404))
		route(s, "Checkout", post, "/v1/orders/{id}/cancel", "cancel-order", s.cancelOrder, by(schemeBuyer), status(202), errs(400, 401, 404, 409, 422, 503))
		route(s, "Checkout", get, "/v1/orders/{id}/calendar.ics", "order-calendar", s.orderCalendar, by(schemeBuyer, schemeAPI), responses(textResponse("text/calendar", "The order's date as an iCalendar entry")), errs(401, 403, 404, 409))
		route(s, "Checkout", get, "/v1/orders/{id}/tickets.pdf", "order-tickets-pdf", s.orderTickets, by(schemeBuyer, schemeAPI), responses(textResponse("application/pdf", "The tickets, one page each")), errs(401, 403, 404, 409))
		route(s, "Tickets", post, "/v1/tickets/{id}/transfer", "transfer-ticket", s.transferTicket, by(schemeBuyer), status(201), body(maxSmallBody), errs(400, 401, 404, 409, 422, 503))
		route(s, "Tickets", get, "/v1/tickets", "list-tickets", s.listTickets, by(schemeBuyer), errs(401))
		route(s, "Checkout", post, "/v1/holds/{id}/price", "price-hold", s.priceHold, by(schemeBuyer), body(maxSmallBody), errs(401, 404, 422))
		route(s, "Checkout", get, "/v1/tickets/{id}/qr.svg", "ticket-qr", s.ticketQR, by(schemeBuyer), responses(svgResponse("The QR code")), errs(401, 404))
	}

	// Waiting room (with an access-token secret) (queue.go)
	if s.WaitingRoom != nil {
		route(s, "Waiting room", post, "/v1/products/{id}/queue", "join-queue", s.joinQueue, by(schemeBuyer), status(201), errs(401, 403, 404, 429), replayed())
		route(s, "Waiting room", get, "/v1/products/{id}/queue/challenge", "queue-challenge", s.queueChallenge, by(schemeBuyer), errs(401, 404))
		route(s, "Waiting room", get, "/v1/queue/{token}", "poll-queue", s.pollQueue, errs(401))
		route(s, "Waiting room", del, "/v1/queue/{token}", "leave-queue", s.leaveQueue, status(204), errs(401))
		route(s, "Waiting room", get, "/v1/products/{id}/queue/fairness", "queue-fairness", s.queueFairness, errs(404))
		route(s, "Waiting room", get, "/v1/products/{id}/queue/draw", "queue-draw", s.queueDraw, errs(404, 422))
		route(s, "Waiting room", put, "/v1/products/{id}/queue/admission", "tune-admission", s.tuneAdmission, by(schemeAPI), body(maxSmallBody), errs(401, 403, 404, 409, 422))
		route(s, "Waiting room", get, "/v1/products/{id}/queue/entries", "queue-entries", s.queueEntries, by(schemeAPI, schemeOperator), errs(401, 403, 404, 422))
		route(s, "Waiting room", del, "/v1/products/{id}/queue/entries/{entryId}", "remove-queue-entry", s.removeQueueEntry, by(schemeAPI), status(204), errs(401, 403, 404))
	}
}
