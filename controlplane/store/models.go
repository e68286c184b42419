package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/shared/snapshot"
)

// catalogLock serializes catalogue replacements across replicas.
const catalogLock = int64(0x7365_6b67_6361_7401)

// UpsertCatalog creates or replaces the catalogue's models and routes; routes of those
// models that the catalogue does not list are removed. Models not in the catalogue stay.
// The catalogue must have been validated (catalog.Validate).
func (s *Store) UpsertCatalog(ctx context.Context, c *catalog.Catalog) (models, routes int, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalogLock); err != nil {
			return err
		}
		ids := make([]string, len(c.Models))
		for i, m := range c.Models {
			ids[i] = m.ID
		}
		// Aliases may move between models of the same file: drop them all first.
		if _, err := tx.Exec(ctx, `DELETE FROM model_aliases WHERE model_id = ANY($1)`, ids); err != nil {
			return translate(err, "clear aliases")
		}
		for _, m := range c.Models {
			if _, err := tx.Exec(ctx, `INSERT INTO models (id, endpoint, created, context_tokens, tokenizer,
					input_ore_per_million, output_ore_per_million, routing, cache_isolation, output_bytes_per_token)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT (id) DO UPDATE SET endpoint = EXCLUDED.endpoint, created = EXCLUDED.created,
					context_tokens = EXCLUDED.context_tokens, tokenizer = EXCLUDED.tokenizer,
					input_ore_per_million = EXCLUDED.input_ore_per_million,
					output_ore_per_million = EXCLUDED.output_ore_per_million, routing = EXCLUDED.routing,
					cache_isolation = EXCLUDED.cache_isolation, output_bytes_per_token = EXCLUDED.output_bytes_per_token`,
				m.ID, m.Endpoint, m.Created, m.ContextTokens, m.Tokenizer, m.InputOrePerMillion, m.OutputOrePerMillion, m.Routing,
				m.CacheIsolation, m.OutputBytesPerToken); err != nil {
				return translate(err, "upsert model "+m.ID)
			}
		}
		for _, m := range c.Models {
			for i, a := range m.Aliases {
				if _, err := tx.Exec(ctx, `INSERT INTO model_aliases (alias, model_id, position) VALUES ($1, $2, $3)`, a, m.ID, i); err != nil {
					return translate(err, fmt.Sprintf("alias %q of %s", a, m.ID))
				}
			}
			keep := make([]string, len(m.Routes))
			for i, r := range m.Routes {
				keep[i] = r.ID
			}
			if _, err := tx.Exec(ctx, `DELETE FROM routes WHERE model_id = $1 AND NOT (id = ANY($2))`, m.ID, keep); err != nil {
				return translate(err, "prune routes of "+m.ID)
			}
			for _, r := range m.Routes {
				if _, err := tx.Exec(ctx, `INSERT INTO routes (id, model_id, provider, base_url, upstream_model, credentials_ref,
						protocols, translate, region, country, priority, weight, max_conns, connect_timeout_ms,
						first_byte_timeout_ms, idle_timeout_ms, total_timeout_ms, continuous_usage_stats,
						allow_remote_media, allow_extensions, metrics_url, server, discovery, state)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
					ON CONFLICT (id) DO UPDATE SET model_id = EXCLUDED.model_id, provider = EXCLUDED.provider,
						base_url = EXCLUDED.base_url, upstream_model = EXCLUDED.upstream_model,
						credentials_ref = EXCLUDED.credentials_ref, protocols = EXCLUDED.protocols,
						translate = EXCLUDED.translate, region = EXCLUDED.region, country = EXCLUDED.country,
						priority = EXCLUDED.priority, weight = EXCLUDED.weight, max_conns = EXCLUDED.max_conns,
						connect_timeout_ms = EXCLUDED.connect_timeout_ms, first_byte_timeout_ms = EXCLUDED.first_byte_timeout_ms,
						idle_timeout_ms = EXCLUDED.idle_timeout_ms, total_timeout_ms = EXCLUDED.total_timeout_ms,
						continuous_usage_stats = EXCLUDED.continuous_usage_stats,
						allow_remote_media = EXCLUDED.allow_remote_media, allow_extensions = EXCLUDED.allow_extensions,
						metrics_url = EXCLUDED.metrics_url, server = EXCLUDED.server, discovery = EXCLUDED.discovery,
						state = EXCLUDED.state`,
					r.ID, m.ID, r.Provider, r.BaseURL, r.UpstreamModel, r.CredentialsRef, r.Protocols, r.Translate,
					r.Region, r.Country, r.Priority, r.Weight, r.MaxConns, r.ConnectTimeoutMS, r.FirstByteTimeoutMS,
					r.IdleTimeoutMS, r.TotalTimeoutMS, r.ContinuousUsageStats, r.AllowRemoteMedia,
					nonNil(r.AllowExtensions), r.MetricsURL, r.Server, r.Discovery, storedState(r.State)); err != nil {
					return translate(err, "upsert route "+r.ID)
				}
				routes++
			}
			models++
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return models, routes, nil
}

const modelColumns = `m.id, COALESCE((SELECT array_agg(a.alias ORDER BY a.position, a.alias) FROM model_aliases a WHERE a.model_id = m.id), '{}'),
	m.endpoint, m.created, m.context_tokens, m.tokenizer, m.input_ore_per_million, m.output_ore_per_million, m.routing,
	m.cache_isolation, m.output_bytes_per_token`

func scanModel(row pgx.Row) (snapshot.Model, error) {
	var m snapshot.Model
	err := row.Scan(&m.ID, &m.Aliases, &m.Endpoint, &m.Created, &m.ContextTokens, &m.Tokenizer, &m.InputOrePerMillion, &m.OutputOrePerMillion, &m.Routing,
		&m.CacheIsolation, &m.OutputBytesPerToken)
	return m, err
}

const routeColumns = `id, model_id, provider, base_url, upstream_model, credentials_ref, protocols, translate, region,
	country, priority, weight, max_conns, connect_timeout_ms, first_byte_timeout_ms, idle_timeout_ms, total_timeout_ms,
	continuous_usage_stats, allow_remote_media, allow_extensions, metrics_url, server, discovery, state`

func scanRoute(row pgx.Row) (snapshot.Route, error) {
	var r snapshot.Route
	err := row.Scan(&r.ID, &r.Model, &r.Provider, &r.BaseURL, &r.UpstreamModel, &r.CredentialsRef, &r.Protocols, &r.Translate,
		&r.Region, &r.Country, &r.Priority, &r.Weight, &r.MaxConns, &r.ConnectTimeoutMS, &r.FirstByteTimeoutMS,
		&r.IdleTimeoutMS, &r.TotalTimeoutMS, &r.ContinuousUsageStats, &r.AllowRemoteMedia, &r.AllowExtensions, &r.MetricsURL, &r.Server,
		&r.Discovery, &r.State)
	if len(r.AllowExtensions) == 0 {
		r.AllowExtensions = nil // the snapshot omits an empty list; keep one form
	}
	return r, err
}

// nonNil returns l, or an empty list for nil (the column is NOT NULL).
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func listModels(ctx context.Context, q queryer) ([]snapshot.Model, error) {
	rows, err := q.Query(ctx, `SELECT `+modelColumns+` FROM models m ORDER BY m.id`)
	if err != nil {
		return nil, translate(err, "list models")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Model, error) { return scanModel(r) })
	return out, translate(err, "list models")
}

func listRoutes(ctx context.Context, q queryer) ([]snapshot.Route, error) {
	rows, err := q.Query(ctx, `SELECT `+routeColumns+` FROM routes ORDER BY id`)
	if err != nil {
		return nil, translate(err, "list routes")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Route, error) { return scanRoute(r) })
	return out, translate(err, "list routes")
}

// ListRoutes returns every route sorted by ID.
func (s *Store) ListRoutes(ctx context.Context) ([]snapshot.Route, error) {
	return listRoutes(ctx, s.pool)
}

// ListModels returns the catalogue: every model sorted by ID with its routes (sorted by
// priority, then ID).
func (s *Store) ListModels(ctx context.Context) ([]catalog.Model, error) {
	var out []catalog.Model
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		models, err := listModels(ctx, tx)
		if err != nil {
			return err
		}
		routes, err := listRoutes(ctx, tx)
		if err != nil {
			return err
		}
		byModel := map[string][]snapshot.Route{}
		for _, r := range routes {
			byModel[r.Model] = append(byModel[r.Model], r)
		}
		out = make([]catalog.Model, len(models))
		for i, m := range models {
			rs := byModel[m.ID]
			if rs == nil {
				rs = []snapshot.Route{}
			}
			sortRoutes(rs)
			out[i] = catalog.Model{Model: m, Routes: rs}
		}
		return nil
	})
	return out, err
}
