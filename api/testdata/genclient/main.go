// Command walk drives the README walk-through through a client generated
// from the API document by oapi-codegen with its defaults (package client,
// written next to this file by TestGeneratedClientDrivesTheWalkthrough):
// tenant, product, buyer token, reservation, poll, replay, availability
// and its 304, release.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"

	"walk/client"
)

func main() {
	if err := walk(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
	fmt.Println("walked")
}

func bearer(token string) client.RequestEditorFn {
	return func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

// buyerToken signs an HS256 buyer token the way a tenant's own login does.
func buyerToken(secret, tenantID, buyer string) string {
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]any{"sub": buyer, "tid": tenantID, "exp": time.Now().Add(time.Hour).Unix()})
	signed := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(m.Sum(nil))
}

func unexpected(step string, status int, body []byte) error {
	return fmt.Errorf("%s: status %d: %s", step, status, body)
}

func walk(ctx context.Context, base, adminKey string) error {
	c, err := client.NewClientWithResponses(base)
	if err != nil {
		return err
	}
	tenant, err := c.CreateTenantWithResponse(ctx, client.TenantBody{Slug: "walk", Name: "Walk"}, bearer(adminKey))
	if err != nil {
		return err
	}
	if tenant.JSON201 == nil {
		return unexpected("create tenant", tenant.StatusCode(), tenant.Body)
	}
	key := tenant.JSON201.ApiKey
	product, err := c.CreateProductWithResponse(ctx, client.ProductBody{Slug: "final", Name: "Cup Final", Kind: "numbered",
		Capacity: 10, PriceCents: 4500, Currency: "EUR"}, bearer(key))
	if err != nil {
		return err
	}
	if product.JSON201 == nil {
		return unexpected("create product", product.StatusCode(), product.Body)
	}
	productID := uuid.MustParse(product.JSON201.Id)
	buyer := bearer(buyerToken(tenant.JSON201.BuyerTokenSecret, tenant.JSON201.Id, "bob"))

	three := int64(3)
	reserve := func() (*client.CreateReservationResponse, error) {
		return c.CreateReservationWithResponse(ctx, productID, &client.CreateReservationParams{IdempotencyKey: "walk-1"},
			client.ReservationBody{Quantity: &three}, buyer)
	}
	accepted, err := reserve()
	if err != nil {
		return err
	}
	if accepted.JSON202 == nil || accepted.JSON202.Status != "QUEUED" {
		return unexpected("reserve", accepted.StatusCode(), accepted.Body)
	}
	requestID := uuid.MustParse(accepted.JSON202.Id)
	var held *client.ReservationView
	for deadline := time.Now().Add(30 * time.Second); held == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("the reservation was never decided")
		}
		wait := "wait=10" // answered when decided
		polled, err := c.GetReservationWithResponse(ctx, requestID, &client.GetReservationParams{Prefer: &wait}, buyer)
		if err != nil {
			return err
		}
		if polled.JSON200 == nil {
			return unexpected("poll", polled.StatusCode(), polled.Body)
		}
		switch polled.JSON200.Status {
		case "QUEUED":
		case "HELD":
			held = polled.JSON200
		default:
			return unexpected("poll", polled.StatusCode(), polled.Body)
		}
	}
	if held.Numbers == nil || len(*held.Numbers) != 3 || held.HoldId == nil {
		return fmt.Errorf("held: %+v", held)
	}
	again, err := reserve()
	if err != nil {
		return err
	}
	if again.JSON200 == nil || again.JSON200.Status != "HELD" {
		return unexpected("replay", again.StatusCode(), again.Body)
	}

	avail, err := c.GetAvailabilityWithResponse(ctx, productID, &client.GetAvailabilityParams{})
	if err != nil {
		return err
	}
	if avail.JSON200 == nil || avail.JSON200.Held != 3 || avail.JSON200.Available != 7 {
		return unexpected("availability", avail.StatusCode(), avail.Body)
	}
	etag := avail.HTTPResponse.Header.Get("ETag")
	same, err := c.GetAvailabilityWithResponse(ctx, productID, &client.GetAvailabilityParams{IfNoneMatch: &etag})
	if err != nil {
		return err
	}
	if same.StatusCode() != http.StatusNotModified {
		return unexpected("availability again", same.StatusCode(), same.Body)
	}

	released, err := c.ReleaseHoldWithResponse(ctx, uuid.MustParse(*held.HoldId), buyer)
	if err != nil {
		return err
	}
	if released.JSON200 == nil {
		return unexpected("release", released.StatusCode(), released.Body)
	}
	return nil
}
