package faults_test

import (
	"os"
	"testing"

	"boxoffice/internal/proctest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.CleanupBinary()
	os.Exit(code)
}
