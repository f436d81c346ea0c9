package webhook_test

import (
	"testing"

	"boxoffice/internal/testfix"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }
