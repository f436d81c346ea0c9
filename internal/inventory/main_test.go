package inventory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (a River
// client not stopped, a pool not closed).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
