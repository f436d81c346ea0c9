package api_test

import (
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/testfix"
)

// The API document passes kin-openapi's strict validation: a tool no one
// here wrote accepts it as it is served.
func TestDocumentValidates(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	r := b.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	doc, err := openapi3.NewLoader().LoadFromData(r.raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/openapi-3.0.json", "", nil).status,
		"no 3.0 downgrade: it kept 3.1-only keywords strict tools refuse")
	yaml := b.do(t, http.MethodGet, "/openapi.yaml", "", nil)
	require.Equal(t, http.StatusOK, yaml.status)
	require.Equal(t, "application/openapi+yaml", yaml.header.Get("Content-Type"))
}
