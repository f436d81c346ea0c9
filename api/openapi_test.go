package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/payment"
	"boxoffice/internal/testfix"
)

// The API document passes kin-openapi's strict validation: a tool no one
// here wrote accepts it as it is served.
func TestDocumentValidates(t *testing.T) {
	t.Parallel()
	b := setupFull(t, testfix.Options{})
	doc, err := openapi3.NewLoader().LoadFromData(b.document(t))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/openapi-3.0.json", "", nil).status,
		"no 3.0 downgrade: it kept 3.1-only keywords strict tools refuse")
	yaml := b.do(t, http.MethodGet, "/openapi.yaml", "", nil)
	require.Equal(t, http.StatusOK, yaml.status)
	require.Equal(t, "application/openapi+yaml", yaml.header.Get("Content-Type"))
}

// setupFull is setup for a deployment with every part (checkout with a
// payment provider, the waiting room): its document has every operation.
func setupFull(t *testing.T, o testfix.Options) *testBundle {
	t.Helper()
	o.Provider = payment.NewSim("http://127.0.0.1:1", time.Second)
	return setup(t, o)
}

// document is the API document the bundle's server serves.
func (b *testBundle) document(t *testing.T) []byte {
	t.Helper()
	r := b.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	return r.raw
}
