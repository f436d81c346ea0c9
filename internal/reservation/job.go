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
// inserts the request rows and, when no job is pending for the product, one
// "drain product P" job (unique per product as well, for the repair job's
// inserts).
//
// Why nothing is stranded: the claim_queues row of the product says whether
// a job is pending. Every accept transaction holds that row FOR KEY SHARE
// until it commits and inserts a job only when job_pending is false; the
// drain ends in a transaction that locks the row FOR UPDATE (so it waits for
// every accept in flight), looks for QUEUED requests — rolling back and
// draining on if there are any — and only then clears job_pending and
// completes the job. An accept that comes after that commit finds
// job_pending false and inserts a new job. Accepts thus never lock River's
// job row while a job is pending: when they did (the unique insert is ON
// CONFLICT DO UPDATE), back-to-back accept transactions kept a fresh job
// locked and River's fetch (FOR UPDATE SKIP LOCKED) could not take it.
//
// TenantID tells the workers whose sale the job serves (they share workers
// between tenants); the job is unique by product alone.
type ClaimArgs struct {
	ProductID uuid.UUID `json:"product_id" river:"unique"`
	TenantID  uuid.UUID `json:"tenant_id,omitzero"`
}

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
