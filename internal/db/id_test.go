package db_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
)

func TestAppendIDAsString(t *testing.T) {
	t.Parallel()
	ids := []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0123abcd-4567-89ef-fedc-ba9876543210")}
	for range 100 {
		ids = append(ids, uuid.New(), db.NewID())
	}
	for _, id := range ids {
		require.Equal(t, "x"+id.String(), string(db.AppendID([]byte("x"), id)))
	}
}
