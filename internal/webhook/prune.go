package webhook

import (
	"context"
	"fmt"
	"time"
)

// LogRetention is how long the delivery log keeps a delivery and its
// attempts.
const LogRetention = 30 * 24 * time.Hour

// Prune deletes the deliveries (and their attempts) made before cutoff,
// returning how many.
func (s *Service) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			DELETE FROM webhook_deliveries WHERE id IN (
				SELECT id FROM webhook_deliveries WHERE created_at < $1 LIMIT 1000)`, cutoff)
		if err != nil {
			return total, fmt.Errorf("prune webhook log: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 1000 {
			return total, nil
		}
	}
}
