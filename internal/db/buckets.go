package db

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Bucket is the SQL of the step a timestamp column falls in, counting from
// the query's $2 (timestamptz) in steps of $3 seconds: step i covers
// [$2 + i·$3, $2 + (i+1)·$3).
func Bucket(column string) string {
	return fmt.Sprintf("floor(extract(epoch FROM %s - $2::timestamptz) / $3)::int", column)
}

// ReadBuckets reads rows of (kind text, step int, values bigint…) — counts
// grouped by kind and Bucket — and calls put for each step in [0, n).
func ReadBuckets(rows pgx.Rows, n, values int, put func(kind string, step int, v []int64)) error {
	var kind string
	var step int
	v := make([]int64, values)
	dest := []any{&kind, &step}
	for i := range v {
		dest = append(dest, &v[i])
	}
	_, err := pgx.ForEachRow(rows, dest, func() error {
		if step >= 0 && step < n {
			put(kind, step, v)
		}
		return nil
	})
	return err
}
