package waitingroom

import "encoding/json"

func jsonUnmarshal(b []byte, v any) error {
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}
