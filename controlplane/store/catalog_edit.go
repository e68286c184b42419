package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Single edits of the catalogue between loads: a model's prices, a route's weight,
// priority and state. Each takes the catalogue lock, so it never interleaves with a load,
// and the tables' triggers notify ChannelChanged, so a new snapshot is compiled as after a
// load. A later load of a file replaces what was edited here: the file is the truth.

// ModelPrices changes a model's prices (öre per million tokens); nil leaves one as it is.
type ModelPrices struct {
	Input, Output *int64
}

// RoutePatch changes a route; nil leaves a field as it is. State is one of
// snapshot.RouteStates.
type RoutePatch struct {
	Weight, Priority *int
	State            *string
}

// storedState is how the store (and the snapshot) writes a route state: enabled as "".
func storedState(s string) string {
	if s == snapshot.RouteEnabled {
		return ""
	}
	return s
}

// GetModel returns one catalogue model with its routes.
func (s *Store) GetModel(ctx context.Context, id string) (catalog.Model, error) {
	var out catalog.Model
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = getModel(ctx, tx, id)
		return err
	})
	return out, err
}

func getModel(ctx context.Context, tx pgx.Tx, id string) (catalog.Model, error) {
	m, err := scanModel(tx.QueryRow(ctx, `SELECT `+modelColumns+` FROM models m WHERE m.id = $1`, id))
	if err != nil {
		return catalog.Model{}, translate(err, "model "+id)
	}
	rows, err := tx.Query(ctx, `SELECT `+routeColumns+` FROM routes WHERE model_id = $1`, id)
	if err != nil {
		return catalog.Model{}, translate(err, "routes of "+id)
	}
	routes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Route, error) { return scanRoute(r) })
	if err != nil {
		return catalog.Model{}, translate(err, "routes of "+id)
	}
	sortRoutes(routes)
	return catalog.Model{Model: m, Routes: routes}, nil
}

// GetRoute returns one route.
func (s *Store) GetRoute(ctx context.Context, id string) (snapshot.Route, error) {
	r, err := scanRoute(s.pool.QueryRow(ctx, `SELECT `+routeColumns+` FROM routes WHERE id = $1`, id))
	return r, translate(err, "route "+id)
}

// SetModelPrices changes a model's prices and returns the model as it now is. Prices must
// not be negative (ErrInvalid); an unknown model is ErrNotFound.
func (s *Store) SetModelPrices(ctx context.Context, id string, p ModelPrices) (catalog.Model, error) {
	if (p.Input != nil && *p.Input < 0) || (p.Output != nil && *p.Output < 0) {
		return catalog.Model{}, fmt.Errorf("prices of %s: %w: must not be negative", id, ErrInvalid)
	}
	var out catalog.Model
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalogLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE models SET input_ore_per_million = COALESCE($2, input_ore_per_million),
				output_ore_per_million = COALESCE($3, output_ore_per_million) WHERE id = $1`, id, p.Input, p.Output)
		if err != nil {
			return translate(err, "prices of "+id)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("model %s: %w", id, ErrNotFound)
		}
		out, err = getModel(ctx, tx, id)
		return err
	})
	return out, err
}

// UpdateRoute changes a route's weight (above 0), priority or state and returns the route
// as it now is. An unknown route is ErrNotFound, a bad value ErrInvalid.
func (s *Store) UpdateRoute(ctx context.Context, id string, p RoutePatch) (snapshot.Route, error) {
	var state *string
	if p.State != nil {
		if !snapshot.KnownRouteState(*p.State) {
			return snapshot.Route{}, fmt.Errorf("route %s: %w: unknown state %q", id, ErrInvalid, *p.State)
		}
		st := storedState(*p.State)
		state = &st
	}
	if p.Weight != nil && *p.Weight <= 0 {
		return snapshot.Route{}, fmt.Errorf("route %s: %w: weight must be greater than 0", id, ErrInvalid)
	}
	var out snapshot.Route
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalogLock); err != nil {
			return err
		}
		var err error
		out, err = scanRoute(tx.QueryRow(ctx, `UPDATE routes SET weight = COALESCE($2, weight),
				priority = COALESCE($3, priority), state = COALESCE($4, state) WHERE id = $1
				RETURNING `+routeColumns, id, p.Weight, p.Priority, state))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("route %s: %w", id, ErrNotFound)
		}
		return translate(err, "route "+id)
	})
	return out, err
}
