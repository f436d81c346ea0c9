package db

import (
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID teaches a connection's type map to send and read
// github.com/google/uuid values in PostgreSQL's binary uuid format. Without
// it pgx goes through uuid.UUID's driver.Valuer (text) and builds an error
// value on every attempt before falling back: profiling the claim batch
// showed that path as the largest share of the worker's CPU. Slices of
// them, the batches' id arrays, would otherwise go through pgx's
// reflection over any slice, element by element.
func registerUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapUUIDScan}, m.TryWrapScanPlanFuncs...)
}

// pgUUID is uuid.UUID with the pgtype interfaces for the binary format.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return errors.New("cannot scan NULL into uuid.UUID (use *uuid.UUID)")
	}
	*u = v.Bytes
	return nil
}

func tryWrapUUIDEncode(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	switch v := value.(type) {
	case uuid.UUID:
		return &uuidEncodePlan{}, pgUUID(v), true
	case []uuid.UUID:
		return &uuidSliceEncodePlan{}, uuidArray(v), true
	}
	return nil, nil, false
}

// uuidArray is a slice of ids as pgx's array codec reads it: a nil slice
// is NULL, as pgx sends any nil slice. Its elements point into ids: the
// codec takes each as an interface value, and a 16-byte value would be
// copied to the heap for each element of every batch, where a pointer is
// not.
func uuidArray(ids []uuid.UUID) pgtype.FlatArray[*pgUUID] {
	if ids == nil {
		return nil
	}
	a := make(pgtype.FlatArray[*pgUUID], len(ids))
	for i := range ids {
		a[i] = (*pgUUID)(&ids[i])
	}
	return a
}

type uuidSliceEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidSliceEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidSliceEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(uuidArray(value.([]uuid.UUID)), buf)
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

func tryWrapUUIDScan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if u, ok := target.(*uuid.UUID); ok {
		return &uuidScanPlan{}, (*pgUUID)(u), true
	}
	return nil, nil, false
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p *uuidScanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *uuidScanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgUUID)(dst.(*uuid.UUID)))
}
