package storefront

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// PublishArgs rebuilds and republishes one tenant's store: queued when the
// tenant changes its store (name, theme, domains). Products need no
// rebuild: the store reads them from the API as it runs.
type PublishArgs struct {
	TenantSlug string `json:"tenant_slug"`
}

func (PublishArgs) Kind() string { return "publish_store" }

// InsertOpts puts the job on its queue. Not unique: a change made while
// a build runs must get a build of its own (River's uniqueness would count
// the running one), and publishing twice is harmless.
func (PublishArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueStores, MaxAttempts: 10}
}

// QueueStores is the River queue of store publishing.
const QueueStores = "stores"

// PublishWorker runs PublishArgs.
type PublishWorker struct {
	river.WorkerDefaults[PublishArgs]
	Publisher *Publisher
}

// Timeout bounds one build and upload.
func (*PublishWorker) Timeout(*river.Job[PublishArgs]) time.Duration { return time.Minute }

// Work builds and publishes the store.
func (w *PublishWorker) Work(ctx context.Context, job *river.Job[PublishArgs]) error {
	return w.Publisher.Publish(ctx, job.Args.TenantSlug)
}
