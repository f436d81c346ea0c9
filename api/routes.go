package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// routes registers every operation: the route table. Each handler is a
// method of Server in the file of its resource; checkout and the waiting
// room exist only when the process has them.
func (s *Server) routes() {
	// Tenants (tenants.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-tenant",
		Method:        http.MethodPost,
		Path:          "/v1/tenants",
		Summary:       "Create a white-label tenant",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusCreated,
		Security:      security(schemeAdmin),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 409, 422},
	}, s.createTenant)
	huma.Register(s.api, huma.Operation{
		OperationID:   "set-tenant-quota",
		Method:        http.MethodPut,
		Path:          "/v1/tenants/{id}/quota",
		Summary:       "Set how many products and numbers a tenant may create",
		Description:   "Without one, a tenant has the deployment's defaults (BOXOFFICE_TENANT_MAX_PRODUCTS, BOXOFFICE_TENANT_MAX_CAPACITY). Products already created stay.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusNoContent,
		Security:      security(schemeAdmin),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 404, 422},
	}, s.setTenantQuota)

	// Console sign-in (console.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "console-sign-in",
		Method:        http.MethodPost,
		Path:          "/v1/console/session",
		Summary:       "Sign the console in: exchange a key for a session cookie",
		Description:   "Takes the platform admin key or a tenant's API key and sets the bo_console cookie (HttpOnly, SameSite=Strict, Secure outside `boxoffice dev`). With the cookie, the operations that key may call accept the session instead of a bearer; changes must send the returned csrfToken as X-CSRF-Token. The session ends on sign-out, after BOXOFFICE_CONSOLE_IDLE without a request, at BOXOFFICE_CONSOLE_MAX_AGE, or when its key is revoked.",
		Tags:          []string{"Console"},
		DefaultStatus: http.StatusCreated,
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 422, 503},
	}, s.consoleSignIn)
	huma.Register(s.api, huma.Operation{
		OperationID: "console-session",
		Method:      http.MethodGet,
		Path:        "/v1/console/session",
		Summary:     "Who the console is signed in as, and its CSRF token",
		Tags:        []string{"Console"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401},
	}, s.consoleWhoAmI)
	huma.Register(s.api, huma.Operation{
		OperationID:   "console-sign-out",
		Method:        http.MethodDelete,
		Path:          "/v1/console/session",
		Summary:       "Sign the console out",
		Tags:          []string{"Console"},
		DefaultStatus: http.StatusNoContent,
		Security:      security(schemeAdmin, schemeOperator),
		Errors:        []int{401, 403},
	}, s.consoleSignOut)

	// Products and availability (products.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-product",
		Method:        http.MethodPost,
		Path:          "/v1/products",
		Summary:       "Create a product (an event or a numbered item sale)",
		Tags:          []string{"Products"},
		DefaultStatus: http.StatusCreated,
		Security:      security(schemeAPI),
		MaxBodyBytes:  maxProductBody,
		Errors:        []int{401, 403, 409, 422},
	}, s.createProduct)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-products",
		Method:      http.MethodGet,
		Path:        "/v1/products",
		Summary:     "List the tenant's products, newest first",
		Tags:        []string{"Products"},
		Security:    security(schemeAPI),
		Errors:      []int{401, 403},
	}, s.listProducts)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-product",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}",
		Summary:     "Get a product with its seat layout",
		Description: "Tenant admins and the tenant's buyers may read it.",
		Tags:        []string{"Products"},
		Security:    security(schemeAPI, schemeBuyer),
		Errors:      []int{401, 403, 404},
	}, s.getProduct)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-availability",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/availability",
		Summary:     "Availability bitmap and counters (public, cached up to 1 s)",
		Description: "Advisory: the claim transaction decides. Send If-None-Match with the last ETag to get 304.",
		Tags:        []string{"Products"},
		Responses:   encodedResponse[Availability](s, "The counters and bitmap (gzipped when the request accepts gzip)"),
		Errors:      []int{404},
	}, s.getAvailability)

	// Stores (store.go): public catalog, the tenant admin's store settings
	// and product changes
	huma.Register(s.api, huma.Operation{
		OperationID: "get-store",
		Method:      http.MethodGet,
		Path:        "/v1/stores/{tenantSlug}",
		Summary:     "A store's public profile: name, theme, domains",
		Description: "Public and cacheable (60 s); send If-None-Match with the last ETag to get 304.",
		Tags:        []string{"Store"},
		Errors:      []int{404},
	}, s.getStore)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-store-products",
		Method:      http.MethodGet,
		Path:        "/v1/stores/{tenantSlug}/products",
		Summary:     "A store's products with their counters and sale status",
		Description: "Published and closed products, soonest on sale first (drafts never). Public and cacheable (5 s); send If-None-Match with the last ETag to get 304.",
		Tags:        []string{"Store"},
		Errors:      []int{404},
	}, s.listStoreProducts)
	huma.Register(s.api, huma.Operation{
		OperationID:   "store-login",
		Method:        http.MethodPost,
		Path:          "/v1/stores/{tenantSlug}/login",
		Summary:       "Ask for a login code by e-mail or SMS (passwordless buyer login)",
		Description:   "Always 202 for a well-formed address, whether or not it has logged in before. The six-digit code expires in 10 minutes; asking again replaces it (the newest code is the valid one). At most 3 codes per address and client (an IPv4 address or an IPv6 /64) per 10 minutes and 20 per address from every client (then 429, the live code kept), and 20 login calls per client per minute. With proof of work on (BOXOFFICE_LOGIN_CHALLENGE_BITS), solve POST /login/challenge first. SMS only to the store's smsCountries (else 422 SMS_COUNTRY_NOT_ALLOWED) and at most BOXOFFICE_SMS_DAILY_CAP a day per store (429 SMS_CAP_REACHED).",
		Tags:          []string{"Store"},
		DefaultStatus: http.StatusAccepted,
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{404, 422, 429, 503},
	}, s.startLogin)
	huma.Register(s.api, huma.Operation{
		OperationID:  "store-login-challenge",
		Method:       http.MethodPost,
		Path:         "/v1/stores/{tenantSlug}/login/challenge",
		Summary:      "A proof-of-work challenge to solve before asking for a login code",
		Description:  "Signed, bound to the store and the address, valid 5 minutes; solve it as the waiting room's (SHA-256(challenge + \":\" + s) starting with bits zero bits) and ask for the code with X-Queue-Challenge and X-Queue-Solution. bits is 0 when the server asks for none.",
		Tags:         []string{"Store"},
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{404, 422},
	}, s.loginChallenge)
	huma.Register(s.api, huma.Operation{
		OperationID:  "store-login-verify",
		Method:       http.MethodPost,
		Path:         "/v1/stores/{tenantSlug}/login/verify",
		Summary:      "Exchange a login code for a buyer token",
		Description:  "A wrong, expired, used or another store's code answers 401 INVALID_CODE. Five tries per address and client per 10 minutes (then every try fails, the code left good for its owner); 50 wrong tries from every client together kill the code. The token (2 h) works wherever a buyer token does.",
		Tags:         []string{"Store"},
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 404, 422, 429},
	}, s.verifyLogin)
	huma.Register(s.api, huma.Operation{
		OperationID:  "store-logo-upload",
		Method:       http.MethodPost,
		Path:         "/v1/store/logo",
		Summary:      "A presigned URL to upload the store's logo straight to the bucket (tenant admin)",
		Description:  "PUT the file to uploadUrl within 10 minutes with the same Content-Type, then set theme.logoUrl to logoUrl with PUT /v1/store.",
		Tags:         []string{"Store"},
		Security:     security(schemeAPI),
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 403, 422, 503},
	}, s.logoUpload)
	huma.Register(s.api, huma.Operation{
		OperationID:  "put-store",
		Method:       http.MethodPut,
		Path:         "/v1/store",
		Summary:      "Set the store's name, theme and domains (tenant admin)",
		Tags:         []string{"Store"},
		Security:     security(schemeAPI),
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 403, 409, 422},
	}, s.putStore)
	huma.Register(s.api, huma.Operation{
		OperationID:   "publish-store",
		Method:        http.MethodPost,
		Path:          "/v1/store/publish",
		Summary:       "Rebuild and publish the store now (tenant admin)",
		Description:   "PUT /v1/store queues this itself; call it to publish again (after a failed build, or a new release of the store's pages). A work process builds and uploads it.",
		Tags:          []string{"Store"},
		DefaultStatus: http.StatusAccepted,
		Security:      security(schemeAPI),
		Errors:        []int{401, 403, 503},
	}, s.publishStore)
	huma.Register(s.api, huma.Operation{
		OperationID:  "update-product",
		Method:       http.MethodPatch,
		Path:         "/v1/products/{id}",
		Summary:      "Change a product: name, description, picture, price, on-sale time, waiting room, publication",
		Description:  "Rules: the price is fixed once a number is held or sold (409 PRICE_LOCKED); the on-sale time and the waiting room change only before the sale opens (409 ALREADY_ON_SALE) and the on-sale time never into the past (422 ON_SALE_IN_PAST); a product never goes back to DRAFT (publication takes PUBLISHED or CLOSED). CLOSED ends the sale: new reservations get 409 SALE_CLOSED.",
		Tags:         []string{"Products"},
		Security:     security(schemeAPI),
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 403, 404, 409, 422},
	}, s.updateProduct)

	// Live availability (stream.go): a plain Fiber route, described in the
	// OpenAPI document
	s.app.Get("/v1/products/:id/availability/stream", s.availabilityStream)
	s.api.OpenAPI().AddOperation(streamOperation())

	// Seat maps (layout.go)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-layout",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/layout",
		Summary:     "A seated product's venue plan: every seat's number, label, position and price level",
		Description: "Public. Cached for a day once a number is held (the plan cannot change then), a minute before; send If-None-Match with the last ETag to get 304.",
		Tags:        []string{"Products"},
		Responses:   encodedResponse[LayoutView](s, "The plan (gzipped when the request accepts gzip)"),
		Errors:      []int{404},
	}, s.getLayout)
	huma.Register(s.api, huma.Operation{
		OperationID:  "put-layout",
		Method:       http.MethodPut,
		Path:         "/v1/products/{id}/layout",
		Summary:      "Replace a seated product's seat map and price levels (until the first hold)",
		Description:  "The seats must add up to the product's capacity. Once a number is held or sold: 409 LAYOUT_LOCKED.",
		Tags:         []string{"Products"},
		Security:     security(schemeAPI),
		MaxBodyBytes: maxSeatMapBody,
		Errors:       []int{401, 403, 404, 409, 422},
	}, s.putLayout)
	huma.Register(s.api, huma.Operation{
		OperationID:  "put-seat-map",
		Method:       http.MethodPut,
		Path:         "/v1/products/{id}/seat-map",
		Summary:      "Import a seat map from CSV (until the first hold)",
		Description:  "text/csv with the header section,row,seat,x,y,price_level and one line per seat in preference order (a row's seats together, side by side in the order listed). The product's price levels stay; set them with PUT /layout or name only levels it has.",
		Tags:         []string{"Products"},
		Security:     security(schemeAPI),
		MaxBodyBytes: maxSeatMapBody,
		Errors:       []int{401, 403, 404, 409, 422},
	}, s.putSeatMap)

	// Reservations and holds (reservations.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-reservation",
		Method:        http.MethodPost,
		Path:          "/v1/products/{id}/reservations",
		Summary:       "Ask for numbers; recorded and queued at once",
		Description:   "Answers 202 with the request id; a replay of the same Idempotency-Key and body answers 200 with the request's current state.",
		Tags:          []string{"Reservations"},
		DefaultStatus: http.StatusAccepted,
		Security:      security(schemeBuyer),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{400, 401, 404, 409, 413, 422},
	}, s.createReservation)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-reservation",
		Method:      http.MethodGet,
		Path:        "/v1/reservations/{id}",
		Summary:     "Poll a reservation request",
		Description: "QUEUED until a worker decides; then HELD (holdId, numbers, expiresAt) or REJECTED (reason), later EXPIRED, RELEASED or CONVERTED. Buyers see their own; tenant admins see all of their tenant's.",
		Tags:        []string{"Reservations"},
		Security:    security(schemeBuyer, schemeAPI),
		Errors:      []int{401, 403, 404},
	}, s.getReservation)
	huma.Register(s.api, huma.Operation{
		OperationID: "release-hold",
		Method:      http.MethodDelete,
		Path:        "/v1/holds/{id}",
		Summary:     "Release a hold at once",
		Description: "Only the buyer who holds it. Releasing an ended hold returns it unchanged.",
		Tags:        []string{"Reservations"},
		Security:    security(schemeBuyer),
		Errors:      []int{401, 404, 409},
	}, s.releaseHold)

	// Operations (ops.go)
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-queues",
		Method:      http.MethodGet,
		Path:        "/v1/ops/queues",
		Summary:     "Queue backlog: River jobs by queue and state, SQS queues, requests by status",
		Description: "Tenant keys see their tenant's claim jobs and requests; the platform admin sees everything, including the SQS queues.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403},
	}, s.opsQueues)
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-dlq",
		Method:      http.MethodGet,
		Path:        "/v1/ops/dlq",
		Summary:     "Peek at the SQS dead-letter queue without consuming it",
		Description: "Messages are released again at once. Tenant keys see only their tenant's messages.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403},
	}, s.opsDlq)
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-dlq-redrive",
		Method:      http.MethodPost,
		Path:        "/v1/ops/dlq/redrive",
		Summary:     "Move every dead-lettered message back to the main queue",
		Description: "Platform admin only (the queues are shared). Safe to call twice: the second call moves nothing.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403, 409},
	}, s.opsDlqRedrive)
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-river-discarded",
		Method:      http.MethodGet,
		Path:        "/v1/ops/river/discarded",
		Summary:     "River jobs discarded after exhausting their attempts",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403},
	}, s.opsRiverDiscarded)
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-river-retry",
		Method:      http.MethodPost,
		Path:        "/v1/ops/river/jobs/{id}/retry",
		Summary:     "Retry a River job now",
		Description: "Platform admin only.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403, 404},
	}, s.opsRiverRetry)

	huma.Register(s.api, huma.Operation{
		OperationID: "list-sales",
		Method:      http.MethodGet,
		Path:        "/v1/ops/sales",
		Summary:     "Products with their counters and sale status, newest first (the console's sales)",
		Description: "A tenant's keys see the tenant's products; the platform admin sees every tenant's.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403},
	}, s.listSales)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-sale",
		Method:      http.MethodGet,
		Path:        "/v1/ops/sales/{id}",
		Summary:     "The live sale view of a product",
		Description: "Computed from the database (requests, holds, orders, payment attempts, the waiting room, River's tables), at most once a second per process: waiting depth and waits, admission rate and why, the claim backlog and rate, rejections by reason, holds and expiry lag, payments in doubt, the checkout switch, outbox lag, queues, the invariant audit (every 10 s) and the last 15 minutes in 15-second steps (every 5 s).",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403, 404},
	}, s.getSale)
	s.app.Get("/v1/ops/sales/:id/stream", s.saleStream)
	s.api.OpenAPI().AddOperation(saleStreamOperation())
	huma.Register(s.api, huma.Operation{
		OperationID: "sales-report",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/report",
		Summary:     "A product's sales report: the funnel minute by minute",
		Description: "From the opening (or the first join of its waiting room, when earlier) to now: joined → admitted → reserved → held → paid, conflicts, expiries, revenue. Steps are a minute, doubled as needed to stay within a day's worth of steps.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403, 404},
	}, s.salesReport)
	huma.Register(s.api, huma.Operation{
		OperationID: "sales-report-csv",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/report.csv",
		Summary:     "The sales report as CSV (one line per step, then the totals)",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403, 404},
	}, s.salesReportCSV)
	// Rehearsals (rehearsals.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "start-rehearsal",
		Method:        http.MethodPost,
		Path:          "/v1/products/{id}/rehearsals",
		Summary:       "Rehearse the on-sale against a shadow copy of the product (tenant admin)",
		Description:   "A work process makes a shadow copy (never in a store, a list or the quota), lets the synthetic buyers arrive through the real waiting room (with the L and W given), claims and test-mode payments (a simulator: BOXOFFICE_REHEARSAL_PSP_URL, or the deployment's simulator; never the real provider), and records the projected time to sell out, admission rate, conflict rate, claim backlog and payment load. Real stock, orders and the provider are untouched. One at a time per product.",
		Tags:          []string{"Rehearsals"},
		DefaultStatus: http.StatusAccepted,
		Security:      security(schemeAPI),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 403, 404, 409, 422, 503},
	}, s.startRehearsal)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-rehearsals",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/rehearsals",
		Summary:     "A product's rehearsals, newest first",
		Tags:        []string{"Rehearsals"},
		Security:    security(schemeAPI, schemeOperator),
		Errors:      []int{401, 403, 404, 503},
	}, s.listRehearsals)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-rehearsal",
		Method:      http.MethodGet,
		Path:        "/v1/rehearsals/{id}",
		Summary:     "A rehearsal: its state and, once done, what it projects",
		Tags:        []string{"Rehearsals"},
		Security:    security(schemeAPI, schemeOperator),
		Errors:      []int{401, 403, 404, 503},
	}, s.getRehearsal)

	huma.Register(s.api, huma.Operation{
		OperationID: "list-audit",
		Method:      http.MethodGet,
		Path:        "/v1/audit",
		Summary:     "The audit log: who did what, when and from where",
		Description: "Newest first. The platform admin sees every entry; a tenant's keys see their tenant's. Page with before = the last id seen.",
		Tags:        []string{"Operations"},
		Security:    security(schemeAdmin, schemeOperator),
		Errors:      []int{401, 403},
	}, s.listAudit)

	// API keys and buyer-token secrets (keys.go)
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-api-key",
		Method:        http.MethodPost,
		Path:          "/v1/tenants/{id}/api-keys",
		Summary:       "Issue an API key (tenant-admin or operator) for a tenant",
		Description:   "The platform admin, or a tenant admin for its own tenant.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusCreated,
		Security:      security(schemeAdmin, schemeAPI),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 403, 404, 422},
	}, s.createApiKey)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-api-keys",
		Method:      http.MethodGet,
		Path:        "/v1/tenants/{id}/api-keys",
		Summary:     "List a tenant's API keys (never the keys themselves)",
		Tags:        []string{"Tenants"},
		Security:    security(schemeAdmin, schemeAPI),
		Errors:      []int{401, 403, 404},
	}, s.listApiKeys)
	huma.Register(s.api, huma.Operation{
		OperationID:   "revoke-api-key",
		Method:        http.MethodDelete,
		Path:          "/v1/tenants/{id}/api-keys/{keyId}",
		Summary:       "Revoke an API key",
		Description:   "Refused by every API process within 10 seconds (lookups are cached that long). Revoking twice is fine.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusNoContent,
		Security:      security(schemeAdmin, schemeAPI),
		Errors:        []int{401, 403, 404},
	}, s.revokeApiKey)
	huma.Register(s.api, huma.Operation{
		OperationID: "rotate-buyer-token-secret",
		Method:      http.MethodPost,
		Path:        "/v1/tenants/{id}/buyer-token-secret/rotate",
		Summary:     "Rotate the secret buyer tokens are signed with",
		Description: "Returns the new secret once. Tokens signed with the previous secret keep verifying for overlapSeconds " +
			"(default 3600) so the tenant's login can switch without signing anyone out; a second rotation ends the " +
			"first one's overlap.",
		Tags:         []string{"Tenants"},
		Security:     security(schemeAdmin, schemeAPI),
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 403, 404, 422},
	}, s.rotateBuyerTokenSecret)

	// Checkout and tickets (with a payment provider) (orders.go)
	if s.Checkout != nil {
		huma.Register(s.api, huma.Operation{
			OperationID:   "create-order",
			Method:        http.MethodPost,
			Path:          "/v1/orders",
			Summary:       "Pay for a hold: authorize, then confirm",
			Description:   "Answers 202 with the order PENDING_PAYMENT; poll GET /v1/orders/{id} until CONFIRMED, FAILED or EXPIRED. The same Idempotency-Key returns the same order (200). After a decline, a new key starts a new attempt with another payment method.",
			Tags:          []string{"Checkout"},
			DefaultStatus: http.StatusAccepted,
			Security:      security(schemeBuyer),
			MaxBodyBytes:  maxSmallBody,
			Errors:        []int{400, 401, 404, 409, 422, 503},
		}, s.createOrder)
		huma.Register(s.api, huma.Operation{
			OperationID: "get-order",
			Method:      http.MethodGet,
			Path:        "/v1/orders/{id}",
			Summary:     "An order with its numbers, payment state and, once confirmed, tickets",
			Tags:        []string{"Checkout"},
			Security:    security(schemeBuyer, schemeAPI),
			Errors:      []int{401, 403, 404},
		}, s.getOrder)
		huma.Register(s.api, huma.Operation{
			OperationID:  "payment-webhook",
			Method:       http.MethodPost,
			Path:         "/v1/webhooks/payments/{provider}",
			Summary:      "Receive a signed payment provider event",
			Description:  "The signature is checked over the raw body (HMAC-SHA256, timestamp within 5 minutes, any of the configured secrets). The event is stored and acknowledged, then processed in a job; duplicates are acknowledged and do nothing.",
			Tags:         []string{"Checkout"},
			MaxBodyBytes: maxSmallBody,
			Errors:       []int{400, 401, 404},
		}, s.paymentWebhook)
		huma.Register(s.api, huma.Operation{
			OperationID: "verify-ticket",
			Method:      http.MethodGet,
			Path:        "/v1/tickets/verify",
			Summary:     "Check a ticket code (at the gate)",
			Description: "Valid when the code is signed by BoxOffice, was issued for one of the tenant's orders, and that order is still confirmed.",
			Tags:        []string{"Checkout"},
			Security:    security(schemeAPI, schemeOperator),
			Errors:      []int{401, 403},
		}, s.verifyTicket)
		huma.Register(s.api, huma.Operation{
			OperationID: "check-in-ticket",
			Method:      http.MethodPost,
			Path:        "/v1/tickets/check-in",
			Summary:     "Check a ticket in at the gate",
			Description: "The first scan of a valid ticket answers CHECKED_IN; later scans answer ALREADY_CHECKED_IN with the time of the first. Invalid, forged or cancelled tickets answer INVALID.",
			Tags:        []string{"Checkout"},
			Security:    security(schemeAPI, schemeOperator),
			Errors:      []int{401, 403, 422},
		}, s.checkInTicket)
		huma.Register(s.api, huma.Operation{
			OperationID: "ops-checkout", Method: http.MethodGet, Path: "/v1/ops/checkout",
			Summary: "Whether new checkouts are paused", Tags: []string{"Operations"},
			Security: security(schemeAdmin, schemeOperator), Errors: []int{401, 403},
		}, s.opsCheckout)
		huma.Register(s.api, huma.Operation{
			OperationID: "ops-checkout-pause", Method: http.MethodPost, Path: "/v1/ops/checkout/pause",
			Summary:     "Pause new checkouts (platform admin)",
			Description: "Paused, POST /v1/orders answers 503 CHECKOUT_PAUSED; orders already started go on.",
			Tags:        []string{"Operations"}, Security: security(schemeAdmin, schemeOperator), Errors: []int{401, 403},
		}, s.opsCheckoutPause)
		huma.Register(s.api, huma.Operation{
			OperationID: "ops-checkout-resume", Method: http.MethodPost, Path: "/v1/ops/checkout/resume",
			Summary:     "Resume new checkouts (platform admin)",
			Description: "Paused, POST /v1/orders answers 503 CHECKOUT_PAUSED; orders already started go on.",
			Tags:        []string{"Operations"}, Security: security(schemeAdmin, schemeOperator), Errors: []int{401, 403},
		}, s.opsCheckoutResume)
		huma.Register(s.api, huma.Operation{
			OperationID: "list-orders",
			Method:      http.MethodGet,
			Path:        "/v1/orders",
			Summary:     "The calling buyer's orders, newest first",
			Tags:        []string{"Checkout"},
			Security:    security(schemeBuyer),
			Errors:      []int{401},
		}, s.listOrders)
		huma.Register(s.api, huma.Operation{
			OperationID: "search-orders",
			Method:      http.MethodGet,
			Path:        "/v1/tenant/orders",
			Summary:     "Find the tenant's orders by order id, e-mail, buyer, number or seat (tenant admin, operator)",
			Tags:        []string{"Checkout"},
			Security:    security(schemeAPI, schemeOperator),
			Errors:      []int{401, 403, 422},
		}, s.searchOrders)
		huma.Register(s.api, huma.Operation{
			OperationID: "order-timeline",
			Method:      http.MethodGet,
			Path:        "/v1/tenant/orders/{id}",
			Summary:     "An order with its payment timeline (attempts, provider webhooks, capture) and tickets",
			Description: "Tickets carry their codes and check-ins: check one in with POST /v1/tickets/check-in.",
			Tags:        []string{"Checkout"},
			Security:    security(schemeAPI, schemeOperator),
			Errors:      []int{401, 403, 404},
		}, s.orderTimeline)
		huma.Register(s.api, huma.Operation{
			OperationID: "ticket-qr",
			Method:      http.MethodGet,
			Path:        "/v1/tickets/{id}/qr.svg",
			Summary:     "A ticket's code as a QR code (SVG), for its buyer",
			Description: "Only the buyer of a confirmed order gets it; anyone else gets 404.",
			Tags:        []string{"Checkout"},
			Security:    security(schemeBuyer),
			Errors:      []int{401, 404},
			Responses: map[string]*huma.Response{"200": {Description: "The QR code",
				Content: map[string]*huma.MediaType{"image/svg+xml": {}}}},
		}, s.ticketQR)
	}

	// Waiting room (with an access-token secret) (queue.go)
	if s.WaitingRoom != nil {
		huma.Register(s.api, huma.Operation{
			OperationID:   "join-queue",
			Method:        http.MethodPost,
			Path:          "/v1/products/{id}/queue",
			Summary:       "Join a product's waiting room",
			Description:   "201 the first time, 200 with the same entry (and token) on every later join: refreshing never improves a place.",
			Tags:          []string{"Waiting room"},
			DefaultStatus: http.StatusCreated,
			Security:      security(schemeBuyer),
			Errors:        []int{401, 403, 404, 429},
		}, s.joinQueue)
		huma.Register(s.api, huma.Operation{
			OperationID: "queue-challenge",
			Method:      http.MethodGet,
			Path:        "/v1/products/{id}/queue/challenge",
			Summary:     "A proof-of-work challenge to solve before joining (when the room asks for one)",
			Description: "Signed, bound to the buyer and the product, valid 5 minutes. Solve it (find s with SHA-256(challenge + \":\" + s) starting with bits zero bits) and join with X-Queue-Challenge and X-Queue-Solution. bits is 0 when the room asks for none.",
			Tags:        []string{"Waiting room"},
			Security:    security(schemeBuyer),
			Errors:      []int{401, 404},
		}, s.queueChallenge)
		huma.Register(s.api, huma.Operation{
			OperationID: "poll-queue",
			Method:      http.MethodGet,
			Path:        "/v1/queue/{token}",
			Summary:     "Where am I? (answered from memory, never the database)",
			Description: "WAITING with position and ETA, ADMITTED with an access token, SOLD_OUT, or EXPIRED. The token is the credential; responses may be cached for a second.",
			Tags:        []string{"Waiting room"},
			Errors:      []int{401},
		}, s.pollQueue)
		huma.Register(s.api, huma.Operation{
			OperationID:   "leave-queue",
			Method:        http.MethodDelete,
			Path:          "/v1/queue/{token}",
			Summary:       "Leave the waiting room (frees an admitted shopper's slot)",
			Tags:          []string{"Waiting room"},
			DefaultStatus: http.StatusNoContent,
			Errors:        []int{401},
		}, s.leaveQueue)
		huma.Register(s.api, huma.Operation{
			OperationID: "queue-fairness",
			Method:      http.MethodGet,
			Path:        "/v1/products/{id}/queue/fairness",
			Summary:     "The draw's commitment before opening, its seed after, and how to recompute it",
			Tags:        []string{"Waiting room"},
			Errors:      []int{404},
		}, s.queueFairness)
		huma.Register(s.api, huma.Operation{
			OperationID: "queue-draw",
			Method:      http.MethodGet,
			Path:        "/v1/products/{id}/queue/draw",
			Summary:     "The draw recomputed from the revealed seed: entry ids in position order, a page at a time",
			Description: "Entry i of the order (counting from offset) holds position offset+i+1. Computed once per process after the draw; empty before it.",
			Tags:        []string{"Waiting room"},
			Errors:      []int{404, 422},
		}, s.queueDraw)
	}
	if s.River != nil {
		s.mountRiverUI()
	}
}
