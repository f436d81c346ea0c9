package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// conforms checks v against the API document's schema of its type, the
// same validation huma gives a JSON body: what reaches the API in another
// form (a seat map in CSV) obeys the rules a JSON body does. It answers 422
// with code and the failures.
func (s *Server) conforms(v any, code string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode for validation: %w", err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("decode for validation: %w", err)
	}
	registry := s.api.OpenAPI().Components.Schemas
	schema := registry.Schema(reflect.TypeOf(v).Elem(), true, "")
	var res huma.ValidateResult
	huma.Validate(registry, schema, huma.NewPathBuffer([]byte("body"), 4), huma.ModeWriteToServer, doc, &res)
	if len(res.Errors) == 0 {
		return nil
	}
	p := problem(http.StatusUnprocessableEntity, code, "validation failed")
	for i, e := range res.Errors {
		if i == 20 {
			break // enough to fix the input by; the rest are likely the same
		}
		if d, ok := e.(huma.ErrorDetailer); ok {
			detail := d.ErrorDetail()
			detail.Value = nil // the caller has its input; echoing it can be megabytes
			p.Errors = append(p.Errors, detail)
		} else {
			p.Errors = append(p.Errors, &huma.ErrorDetail{Message: e.Error()})
		}
	}
	return p
}
