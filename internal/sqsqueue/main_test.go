package sqsqueue_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a consumer, publisher or pool outlives its
// test. kumo starts process-wide goroutines for its other emulated services
// when imported; they are not ours to stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/sivchari/kumo/internal/service/dynamodb.(*MemoryStorage).ttlReaper"))
}
