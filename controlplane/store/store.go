// Package store is the control plane's Postgres state: accounts, keys, the catalogue, the
// ledger, request records, usage aggregates, nodes and the snapshot version. Every SQL
// statement of the control plane lives here; pgx errors are translated at this boundary
// into the sentinel errors below.
//
// The schema is created by the numbered migrations embedded from migrations/ and applied
// by Open (github.com/jackc/tern/v2, under an advisory lock so replicas can start
// together). Later features add their own tables as new numbered files in that folder.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Sentinel errors returned (wrapped) by store operations.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// Notification channels.
const (
	// ChannelChanged is notified after any change to what the snapshot carries.
	ChannelChanged = "gateway_changed"
	// ChannelBalances is notified with the ledger clock after any ledger change.
	ChannelBalances = "gateway_balances"
)

// Config configures Open.
type Config struct {
	// DatabaseURL is a libpq-style connection string or URL of the runtime role (a
	// member of gateway_runtime, see migration 008) the store serves with. Required.
	DatabaseURL string
	// MigrateDatabaseURL connects as the role that owns the schema; migrations run over
	// it and the connection is closed before serving. Empty: migrations run over
	// DatabaseURL, which then owns the schema and could drop the ledger's protections
	// (Open logs a warning when the serving role owns the ledger or is a superuser).
	MigrateDatabaseURL string
	// MaxConns bounds the pool (default 10).
	MaxConns int32
	// Logger receives migration and listener messages (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SkipMigrations leaves the schema alone (for tools that must not change it).
	SkipMigrations bool
	// Metrics receives the figures of every usage batch ingest (default: none).
	Metrics IngestMetrics
	// RecordRetention is how long request records are kept (the retention job's days; 0:
	// for ever). The ingest refuses a record older than that less an hour: retention may
	// have deleted an earlier copy of it, and charging it again would break exactly-once.
	RecordRetention time.Duration
	// IngestConcurrency bounds how many usage batches this store applies at once; the rest
	// wait in the control plane, each until its request's context ends (default
	// DefaultIngestConcurrency; negative: no bound). Batches over the same accounts run
	// one at a time in Postgres anyway (each locks its accounts' balances first).
	IngestConcurrency int
}

// DefaultIngestConcurrency is Config.IngestConcurrency's default.
const DefaultIngestConcurrency = 1

// Store is the Postgres-backed state. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	// rejected counts usage records refused by ingest (see RejectedRecords).
	rejected atomic.Int64
	// parts are the partitions of request_records as last read (nil: read on next use).
	parts atomic.Pointer[recordParts]
	// gate bounds the ingest transactions running at once (Config.IngestConcurrency).
	gate *ingestGate
}

// Open connects, applies pending migrations and returns the store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("store: database URL is required")
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.IngestConcurrency == 0 {
		cfg.IngestConcurrency = DefaultIngestConcurrency
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	s := &Store{cfg: cfg, log: cfg.Logger, now: cfg.Now, gate: newIngestGate(cfg.IngestConcurrency, time.Now)}
	if !cfg.SkipMigrations {
		mcc := pcfg.ConnConfig
		if cfg.MigrateDatabaseURL != "" {
			if mcc, err = pgx.ParseConfig(cfg.MigrateDatabaseURL); err != nil {
				return nil, fmt.Errorf("store: parse migration database URL: %w", err)
			}
		}
		if err := s.migrate(ctx, mcc); err != nil {
			return nil, err
		}
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("store: ping: %w", err)
	}
	if !cfg.SkipMigrations {
		owns, role, err := s.OwnsLedger(ctx)
		if err != nil {
			s.pool.Close()
			return nil, err
		}
		if owns {
			s.log.Warn("the database role the control plane serves with owns the ledger or is a superuser: it could drop the ledger's append-only trigger and write balances directly; serve as a member of gateway_runtime and migrate with --migrate-database-url", "role", role)
		}
	}
	return s, nil
}

// OwnsLedger reports whether the serving role owns the ledger table (directly or through
// a role it belongs to) or is a superuser, and names the role.
func (s *Store) OwnsLedger(ctx context.Context) (bool, string, error) {
	var owns bool
	var role string
	err := s.pool.QueryRow(ctx, `SELECT current_user::text,
			pg_has_role(current_user, c.relowner, 'USAGE') OR r.rolsuper
		FROM pg_class c, pg_roles r WHERE c.oid = 'public.ledger'::regclass AND r.rolname = current_user`).Scan(&role, &owns)
	return owns, role, translate(err, "ledger owner")
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the pool for its metrics (opsmetrics) and for tests that look behind the store.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrations returns the embedded migration files (for inspection and tests).
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

func (s *Store) migrate(ctx context.Context, cc *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("store: connect for migrations: %w", err)
	}
	defer conn.Close(context.Background())
	m, err := migrate.NewMigrator(ctx, conn, "public.schema_version")
	if err != nil {
		return fmt.Errorf("store: migrator: %w", err)
	}
	if err := m.LoadMigrations(Migrations()); err != nil {
		return fmt.Errorf("store: load migrations: %w", err)
	}
	m.OnStart = func(seq int32, name, dir, _ string) {
		s.log.Info("applying migration", "sequence", seq, "name", name, "direction", dir)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// SchemaVersion returns the number of applied migrations.
func (s *Store) SchemaVersion(ctx context.Context) (int32, error) {
	var v int32
	err := s.pool.QueryRow(ctx, "SELECT version FROM public.schema_version").Scan(&v)
	return v, translate(err, "schema version")
}

// InTx runs fn in a transaction, committing when it returns nil. Store functions that end
// in Tx take the transaction so callers can combine them with their own statements.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// translate maps pgx and Postgres errors to the store's sentinel errors, keeping the
// original error text for logs.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		detail := pg.Message
		if pg.Detail != "" {
			detail += " (" + pg.Detail + ")"
		}
		switch {
		case pg.Code == "23505": // unique_violation
			return fmt.Errorf("%s: %w: %s", what, ErrConflict, detail)
		case pg.Code == "23503": // foreign_key_violation
			return fmt.Errorf("%s: %w: %s", what, ErrNotFound, detail)
		case pg.Code == "23514" || pg.Code == "23502" || pg.Code[:2] == "22": // check, not null, data exceptions
			return fmt.Errorf("%s: %w: %s", what, ErrInvalid, detail)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isRetryable reports serialization failures and deadlocks, which a retry resolves, and a
// row no partition of the records takes (the ingest reads the partitions again).
func isRetryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01") || isNoPartition(err)
}
