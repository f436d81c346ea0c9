// Package faults holds the fault suite: real processes of the binary
// (internal/proctest) against a PostgreSQL cluster each test owns, killed
// and restarted while a sale runs. It has no code of its own.
package faults
