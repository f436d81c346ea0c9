package reservation

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// ClaimArgs is the River job that drains one product's QUEUED requests.
//
// Why one job per product and not one per request: a claim transaction that
// decides hundreds of requests of one product at once is the performance
// lever (one commit, one bitmap rewrite), and with a job per request every
// request would also cost a job fetch, a worker slot and a completion even
// when another worker's batch already decided it — on a 2-core machine that
// job overhead, not the claim, became the ceiling. So the accept transaction
// inserts the request row and a unique "drain product P" job; the insert is a
// no-op when such a job is already waiting or running.
//
// Why nothing is stranded: River's unique insert is ON CONFLICT DO UPDATE, so
// an accept that finds the job running locks the job row until the accept
// commits. The worker completes its job in a final transaction that first
// completes the job (which waits for any such accept) and then looks for
// QUEUED requests; if it finds any it rolls back and keeps draining. An accept
// that comes after that commit finds no live job and inserts a new one.
type ClaimArgs struct {
	ProductID uuid.UUID `json:"product_id"`
}

// Kind is River's name for the job.
func (ClaimArgs) Kind() string { return "claim_product" }

// InsertOpts makes the job unique per product while it waits or runs.
// Retryable is left out so that new requests get a prompt drain while a
// failed one backs off.
func (ClaimArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue: QueueClaims,
		UniqueOpts: river.UniqueOpts{
			ByArgs: true,
			ByState: []rivertype.JobState{
				rivertype.JobStateAvailable, rivertype.JobStatePending,
				rivertype.JobStateRunning, rivertype.JobStateScheduled,
			},
		},
	}
}

// QueueClaims is the River queue claim jobs run on.
const QueueClaims = "claims"
