package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener receives notifications from Listen.
type Listener struct {
	// Channels to LISTEN on.
	Channels []string
	// OnConnect runs after every (re)connection, once LISTEN is in effect: notifications
	// sent while disconnected are lost, so the caller should resynchronise here.
	OnConnect func()
	// OnNotify runs for every notification, on the listening goroutine.
	OnNotify func(channel, payload string)
}

// Listen holds a dedicated connection (outside the pool) listening on l.Channels until
// ctx ends, reconnecting with backoff after failures. It returns ctx's error.
func (s *Store) Listen(ctx context.Context, l Listener) error {
	backoff := 100 * time.Millisecond
	for {
		err := s.listenOnce(ctx, l)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("notification listener disconnected; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, l Listener) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range l.Channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	if l.OnConnect != nil {
		l.OnConnect()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if l.OnNotify != nil {
			l.OnNotify(n.Channel, n.Payload)
		}
	}
}
