package api

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// refuseUnstorableText answers 400 to a request whose path, query values or
// header values carry a NUL or bytes that are not UTF-8: nothing downstream
// can store or compare them (PostgreSQL refuses both), so they are refused
// at the door with a clear problem instead of failing deep inside.
func refuseUnstorableText(c *fiber.Ctx) error {
	path := c.Path()
	bad := !utf8.ValidString(path) || strings.IndexByte(path, 0) >= 0
	for k, v := range c.Context().QueryArgs().All() {
		bad = bad || !clean(k) || !clean(v)
	}
	for k, v := range c.Request().Header.All() {
		bad = bad || !clean(k) || !clean(v)
	}
	if bad {
		return fiberProblem(c, problem(fiber.StatusBadRequest, "MALFORMED_REQUEST",
			"the path, a query parameter or a header holds a NUL character or invalid UTF-8"))
	}
	return c.Next()
}

func clean(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }
