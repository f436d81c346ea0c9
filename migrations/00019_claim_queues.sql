-- +goose Up
-- Whether a claim job will look at a product's queue again. Every accept
-- transaction holds its product's row FOR KEY SHARE until commit (accepts
-- never wait for each other) and inserts a claim job only when job_pending
-- is false, turning it true; a drain ends by locking the row FOR UPDATE
-- (waiting for the accepts in flight), finding nothing queued, and turning
-- it false in the transaction that completes its job. So no request is
-- left without a job, and accepts do not row-lock River's job — which,
-- locked by back-to-back accept transactions, could not be fetched.
CREATE TABLE claim_queues (
    product_id  uuid PRIMARY KEY,
    job_pending boolean NOT NULL DEFAULT false
);

-- The accept path inserts requests only for a product it has just read,
-- tenant-scoped, and neither products nor tenants are ever deleted; the
-- foreign keys' per-row checks lock the one hot product row FOR KEY SHARE
-- from every concurrent accept transaction (a multixact each time), the
-- costliest part of the insert in a burst. Like holds and claims, the table
-- goes without them.
ALTER TABLE reservation_requests DROP CONSTRAINT reservation_requests_tenant_id_fkey,
                                 DROP CONSTRAINT reservation_requests_product_id_fkey;

-- +goose Down
ALTER TABLE reservation_requests ADD FOREIGN KEY (tenant_id) REFERENCES tenants (id),
                                 ADD FOREIGN KEY (product_id) REFERENCES products (id);
DROP TABLE claim_queues;
