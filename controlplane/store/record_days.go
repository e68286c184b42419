package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oklog/ulid/v2"
)

// Request records are partitioned by range of request ID, one partition per UTC day of the
// IDs' ULID time (migration 017): request_records_low below the first day, one
// request_records_YYYYMMDD per day, request_records_high from "req_8" up. The ingest
// places every record in a partition before it stores it; an ID that falls in a day
// without a partition is refused, alone.

// highBound is the lowest ID of request_records_high: above every ULID's time.
const highBound = "req_8"

// DayBound returns the lowest request ID of the UTC day that holds t: "req_", the day's
// first millisecond as a ULID's ten time characters, sixteen zeros
// (request_records_day_bound in migration 017). Days after the last a ULID can name give
// "req_8".
func DayBound(t time.Time) string {
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(UTCDay(t))); err != nil {
		return highBound
	}
	return "req_" + id.String()
}

// UTCDay returns the start of t's UTC day: the day a record's partition is named by.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// recordPart is one partition of request_records and its range of IDs, [lo, hi) in byte
// order; noLo is MINVALUE, noHi MAXVALUE.
type recordPart struct {
	name       string
	lo, hi     string
	noLo, noHi bool
}

// recordParts are the partitions in order of their ranges.
type recordParts []recordPart

// holds reports whether some partition takes id.
func (p recordParts) holds(id string) bool {
	i, _ := slices.BinarySearchFunc(p, id, func(r recordPart, id string) int {
		if r.noLo || r.lo <= id {
			return -1
		}
		return 1
	})
	if i == 0 {
		return false
	}
	r := p[i-1]
	return r.noHi || id < r.hi
}

// readRecordParts reads the partitions of request_records from the catalogue.
func readRecordParts(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (recordParts, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'public.request_records'::regclass`)
	if err != nil {
		return nil, fmt.Errorf("read record partitions: %w", err)
	}
	var parts recordParts
	for rows.Next() {
		var name string
		var bound *string
		if err := rows.Scan(&name, &bound); err != nil {
			return nil, fmt.Errorf("read record partitions: %w", err)
		}
		if bound == nil { // dropped since the catalogue was read: pg_get_expr finds no table
			continue
		}
		p, err := parseRangeBound(*bound)
		if err != nil {
			return nil, fmt.Errorf("partition %s: %w", name, err)
		}
		p.name = name
		parts = append(parts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read record partitions: %w", err)
	}
	slices.SortFunc(parts, func(a, b recordPart) int {
		switch {
		case a.noLo && b.noLo:
			return 0
		case a.noLo:
			return -1
		case b.noLo:
			return 1
		}
		return strings.Compare(a.lo, b.lo)
	})
	return parts, nil
}

// parseRangeBound reads a range partition's bound as pg_get_expr prints it:
// FOR VALUES FROM ('a') TO ('b'), either side MINVALUE or MAXVALUE.
func parseRangeBound(s string) (recordPart, error) {
	var p recordPart
	rest, ok := strings.CutPrefix(s, "FOR VALUES FROM (")
	if !ok {
		return p, fmt.Errorf("not a range bound: %q", s)
	}
	var err error
	if p.lo, p.noLo, rest, err = boundValue(rest); err != nil {
		return p, fmt.Errorf("bound %q: %w", s, err)
	}
	if rest, ok = strings.CutPrefix(rest, ") TO ("); !ok {
		return p, fmt.Errorf("not a range bound: %q", s)
	}
	if p.hi, p.noHi, rest, err = boundValue(rest); err != nil {
		return p, fmt.Errorf("bound %q: %w", s, err)
	}
	if rest != ")" {
		return p, fmt.Errorf("not a range bound: %q", s)
	}
	return p, nil
}

// boundValue reads one value of a bound: MINVALUE, MAXVALUE or a quoted literal.
func boundValue(s string) (v string, infinite bool, rest string, err error) {
	for _, inf := range []string{"MINVALUE", "MAXVALUE"} {
		if r, ok := strings.CutPrefix(s, inf); ok {
			return "", true, r, nil
		}
	}
	if !strings.HasPrefix(s, "'") {
		return "", false, "", errors.New("value is not a quoted literal")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), false, s[i+1:], nil
	}
	return "", false, "", errors.New("unterminated literal")
}

// recordPartsFor returns the partitions as last read, reading them when there are none yet
// or when fresh is set.
func (s *Store) recordPartsFor(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, fresh bool) (recordParts, error) {
	if p := s.parts.Load(); p != nil && !fresh {
		return *p, nil
	}
	p, err := readRecordParts(ctx, q)
	if err != nil {
		return nil, err
	}
	s.parts.Store(&p)
	return p, nil
}

// placeRecords refuses the candidates whose request ID no partition takes (its day's
// partition was dropped by retention, or not made yet: too far ahead), each alone, as the
// retention guard refuses records too old: a copy retention dropped could not be told
// apart. The partitions are those last read, read again before a record is refused.
func (s *Store) placeRecords(ctx context.Context, tx pgx.Tx, cands []candidate, bad []rejection) ([]candidate, []rejection, error) {
	parts, err := s.recordPartsFor(ctx, tx, false)
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(cands, func(c candidate) bool { return !parts.holds(c.rec.RequestID) })
	if i < 0 {
		return cands, bad, nil
	}
	if parts, err = s.recordPartsFor(ctx, tx, true); err != nil {
		return nil, nil, err
	}
	out := slices.Clone(cands[:i])
	bad = slices.Clip(bad)
	for _, c := range cands[i:] {
		if parts.holds(c.rec.RequestID) {
			out = append(out, c)
			continue
		}
		bad = append(bad, reject(c.rec, c.raw, RejectInvalid, "request_id falls in a day of request records without a partition: "+
			"dropped by the records' retention (a copy it dropped could not be told apart) or further ahead than the partitions made"))
	}
	return out, bad, nil
}

// isNoPartition reports Postgres's refusal of a row no partition takes (a partition was
// dropped after the ingest placed its records): the ingest reads the partitions again and
// retries.
func isNoPartition(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23514" && strings.HasPrefix(pg.Message, "no partition of relation")
}

// RecordDays is what partitions request records have: the UTC days with one, in order,
// and the first day that can have one (the days before are in request_records_low).
type RecordDays struct {
	First time.Time
	Days  []time.Time
}

// RecordDays reads the record partitions.
func (s *Store) RecordDays(ctx context.Context) (RecordDays, error) {
	parts, err := s.recordPartsFor(ctx, s.pool, true)
	if err != nil {
		return RecordDays{}, err
	}
	var rd RecordDays
	for _, p := range parts {
		if p.name == "request_records_low" && !p.noHi && len(p.hi) == 4+ulid.EncodedSize {
			if id, err := ulid.ParseStrict(p.hi[4:]); err == nil {
				rd.First = UTCDay(ulid.Time(id.Time()))
			}
			continue
		}
		if d, ok := strings.CutPrefix(p.name, "request_records_"); ok {
			if t, err := time.Parse("20060102", d); err == nil {
				rd.Days = append(rd.Days, t)
			}
		}
	}
	return rd, nil
}

// AddRecordDay makes the partition of day's records unless it exists (or the day lies
// below the first day); it reports whether it made it. Replicas may call it at once.
func (s *Store) AddRecordDay(ctx context.Context, day time.Time) (bool, error) {
	return s.recordDayFunc(ctx, "request_records_add_day", day)
}

// DropRecordDay drops the partition of day's records, and so the records, if it exists;
// it reports whether it dropped it. Ledger entries and daily aggregates are kept.
func (s *Store) DropRecordDay(ctx context.Context, day time.Time) (bool, error) {
	return s.recordDayFunc(ctx, "request_records_drop_day", day)
}

func (s *Store) recordDayFunc(ctx context.Context, fn string, day time.Time) (bool, error) {
	var done bool
	err := s.pool.QueryRow(ctx, `SELECT `+fn+`($1::date)`, UTCDay(day).Format(time.DateOnly)).Scan(&done)
	if err != nil {
		return false, translate(err, fn+" "+UTCDay(day).Format(time.DateOnly))
	}
	if done {
		s.parts.Store(nil) // read again on next use
	}
	return done, nil
}
